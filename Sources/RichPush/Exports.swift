// The layers below the engine, re-exported: a library user writes `import RichPush` alone and gets every public
// type, as when the library was one target. (An umbrella of re-exports rather than one target holding everything:
// the compiler then refuses a lower layer that imports a higher one.)
@_exported import RichPushCore
