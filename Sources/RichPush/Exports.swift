// The layers below the engine whose public types a library user meets, re-exported: `import RichPush` alone gives
// every public type, as when the library was one target. (An umbrella of re-exports rather than one target holding
// everything: the compiler then refuses a lower layer that imports a higher one.)
@_exported import RichPushCore
@_exported import RichPushStore
