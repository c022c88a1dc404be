// The layers below the engine, re-exported: `import RichPush` alone gives a library user every public type, as when
// the library was one target. (An umbrella of re-exports rather than one target holding everything: the compiler
// then refuses a lower layer that imports a higher one.) RichPushFetch is not among them: it has no public API,
// and the engine reaches it only through the attachment pipeline's Fetcher.
@_exported import RichPushConventions
@_exported import RichPushCore
@_exported import RichPushMedia
@_exported import RichPushStore
