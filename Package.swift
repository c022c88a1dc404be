// swift-tools-version: 6.0
import PackageDescription

// MARK: - C targets
// Typed, non-variadic wrappers over the C libraries we use; each symbol is prefixed with its target's name.

let cTargets: [Target] = [
    // libssl (libcurl's own, OpenSSL 3): ccurl_easy_alpn_is_h2 reads a connection's ALPN from it.
    .target(
        name: "CCurl",
        linkerSettings: [.linkedLibrary("curl"), .linkedLibrary("ssl")]
    ),
    .target(
        name: "CMagic",
        linkerSettings: [.linkedLibrary("magic")]
    ),
    .target(
        name: "CCrypto",
        linkerSettings: [.linkedLibrary("crypto")]
    ),
    // CRC-32 for the PNG structure check: libdeflate's, folded with PCLMULQDQ (Debian's libdeflate-dev).
    .target(
        name: "CDeflate",
        linkerSettings: [.linkedLibrary("deflate")]
    ),
    .target(
        name: "CMicroHTTPD",
        linkerSettings: [.linkedLibrary("microhttpd")]
    ),
    .target(
        name: "CHiredis",
        linkerSettings: [.linkedLibrary("hiredis")]
    ),
    // Our wrappers over libvips's variadic calls; libvips itself (Debian's libvips42, from libvips-dev) is opened
    // with dlopen when an engine that transforms is made, not linked (see cvips.c).
    .target(name: "CVips"),
    // System calls the Glibc module does not expose.
    .target(name: "CSystem"),
]

// MARK: - Library layers
// Each target imports only the ones below it (scripts/check-layers fails the build's tests otherwise); the README's
// Layout section draws the graph.

let libraryTargets: [Target] = [
    // The vocabulary every layer speaks: payloads and JSON, media types, problems and their codes, the fetched-media
    // record, the leaf settings, locks and threads.
    .target(name: "RichPushCore", dependencies: ["CSystem"]),
    // Attachment files: the checked root, each attachment's own directory, partial files written and renamed into
    // place, spares made ahead, garbage collection; everything by descriptor.
    .target(
        name: "RichPushStore",
        dependencies: ["RichPushCore", "CSystem"]
    ),
    // Fetching over HTTP into attachment files: the curl multi loop, transfers, redirects, the address policy at
    // connect, body caps. It knows nothing of digests, transformation or the engine: the stages above drive it.
    .target(
        name: "RichPushFetch",
        dependencies: ["RichPushCore", "RichPushStore", "CCurl"]
    ),
    // Payload conventions: the vendors' media fields, their key paths and JSON files, routes, templates.
    .target(
        name: "RichPushConventions",
        dependencies: ["RichPushCore"]
    ),
    // The attachment pipeline's stages above fetching, each a type: sniff (libmagic), digest and structure
    // (SHA-256, image structures), transform (the ImageConverter protocol and its threads, the SVG renderer's child
    // processes: CSystem for their limits), cache, publish; Fetcher drives fetch, sniff, digest and transform in that
    // order.
    .target(
        name: "RichPushMedia",
        dependencies: ["RichPushCore", "RichPushStore", "RichPushFetch", "CMagic", "CCrypto", "CDeflate", "CSystem"]
    ),
    // The engine (`Enricher`), the public product: re-exports the layers below, so `import RichPush` is all a
    // library user writes.
    .target(
        name: "RichPush",
        dependencies: ["RichPushCore", "RichPushStore", "RichPushFetch", "RichPushConventions", "RichPushMedia"]
    ),
]

// MARK: - Transformation, service, worker and CLI

let swiftTargets: [Target] = [
    // The image transformation step's converter on libvips, apart from the library, which calls it through the
    // `ImageConverter` protocol: a program that transforms nothing needs no image library. It needs the attachment
    // pipeline's protocol, not the engine.
    .target(
        name: "RichPushTransform",
        dependencies: ["RichPushCore", "RichPushMedia", "CVips"]
    ),
    // Publishing to S3-compatible object storage (`ObjectStorePublisher`), apart from the library as the converter
    // is: a `MediaPublisher` that uploads with libcurl on threads of its own, signed with Signature Version 4.
    .target(
        name: "RichPushObjectStore",
        dependencies: ["RichPushCore", "RichPushFetch", "RichPushMedia", "CCurl"]
    ),
    // The HTTP core: an HTTP/1.1 server on libmicrohttpd (connections, request heads, messages, streamed responses,
    // health routes), a Service of the lifecycle; on the vocabulary alone, so it cannot know of enrichment.
    .target(
        name: "RichPushHTTP",
        dependencies: ["RichPushCore", "CMicroHTTPD"]
    ),
    // `richpush serve`: the enrichment service over the HTTP core, kept apart so that the library needs no HTTP
    // server.
    .target(
        name: "RichPushServer",
        dependencies: ["RichPush", "RichPushHTTP"]
    ),
    // `richpush worker`: Redis Streams consumer groups through hiredis; the HTTP core for `--metrics-listen`.
    .target(
        name: "RichPushWorker",
        dependencies: ["RichPush", "RichPushHTTP", "CHiredis"]
    ),
    .executableTarget(
        name: "richpush",
        dependencies: [
            "RichPush", "RichPushHTTP", "RichPushServer", "RichPushWorker", "RichPushTransform", "RichPushObjectStore",
        ]
    ),
]

// MARK: - Test support
// A real HTTP origin on loopback, used by the tests and by `make demo` to serve the fixture media.

let supportTargets: [Target] = [
    .target(name: "FixtureOrigin"),
    .executableTarget(
        name: "richpush-fixture-origin",
        dependencies: ["FixtureOrigin"]
    ),
    // The benchmark's URLSession baseline (see bench/run.py).
    .executableTarget(name: "richpush-bench-urlsession"),
    // libFuzzer target over the payload parser and the conventions; see `make fuzz`.
    .executableTarget(
        name: "richpush-fuzz",
        dependencies: ["RichPush"]
    ),
    // The test process's own start-up: libvips opened before main (see ctestsupport.c).
    .target(name: "CTestSupport", dependencies: ["CVips"]),
    // What every test target shares: waiting for a condition with a bound.
    .target(
        name: "RichPushTestSupport", dependencies: ["FixtureOrigin", "CSystem"], path: "Tests/RichPushTestSupport"),
]

// MARK: - Tests

let testTargets: [Target] = [
    // One test target per library layer, testing it without the layers above (scripts/check-layers holds them to
    // it); suites that go through the engine, the CLI, the service or the worker are RichPushTests'.
    .testTarget(name: "RichPushCoreTests", dependencies: ["RichPushCore", "RichPushTestSupport"]),
    .testTarget(name: "RichPushStoreTests", dependencies: ["RichPushCore", "RichPushStore", "RichPushTestSupport"]),
    // CCurl for the result codes `CurlFailure` maps.
    .testTarget(
        name: "RichPushFetchTests", dependencies: ["RichPushCore", "RichPushFetch", "CCurl", "RichPushTestSupport"]
    ),
    .testTarget(
        name: "RichPushConventionsTests",
        dependencies: ["RichPushCore", "RichPushConventions", "RichPushTestSupport"]
    ),
    .testTarget(name: "RichPushMediaTests", dependencies: ["RichPushCore", "RichPushMedia", "RichPushTestSupport"]),
    .testTarget(
        name: "RichPushTests",
        // The CLI is a dependency so that `swift test` builds it: the CLI tests run the real binary. CSystem for
        // the child processes' spawn (ChildProcess.swift), CCurl for a transfer made by hand (TLSTests).
        dependencies: [
            "RichPushCore", "RichPushStore", "RichPushFetch", "RichPushConventions", "RichPushMedia", "RichPush",
            "RichPushHTTP", "RichPushServer", "RichPushWorker", "RichPushTransform", "RichPushObjectStore",
            "FixtureOrigin", "richpush", "CSystem", "CCurl", "CTestSupport", "RichPushTestSupport",
        ]
    ),
    // The transformation's own suites: VipsConverter on files, without the engine.
    .testTarget(
        name: "RichPushTransformTests",
        dependencies: ["RichPushCore", "RichPushMedia", "RichPushTransform", "FixtureOrigin", "RichPushTestSupport"]
    ),
    // The object store publisher's own suites: its parsing without I/O, its uploads against a real SeaweedFS.
    .testTarget(
        name: "RichPushObjectStoreTests",
        // CCurl and RichPushFetch for the curl codes and the stop flag `StoreError` classifies.
        dependencies: [
            "RichPushCore", "RichPushFetch", "RichPushMedia", "RichPushObjectStore", "RichPushTestSupport", "CCurl",
        ]
    ),
    // The worker's own suites: its state machine's decisions, without Redis.
    .testTarget(name: "RichPushWorkerTests", dependencies: ["RichPushCore", "RichPushWorker", "RichPushTestSupport"]),
    // The service application's own suites: access log, request ledger, served attachments (no CLI process).
    .testTarget(
        name: "RichPushServerTests",
        dependencies: ["RichPushCore", "RichPush", "RichPushHTTP", "RichPushServer", "RichPushTestSupport"]
    ),
    // The HTTP core's own suites: heads, messages, the streamed body (no enrichment).
    .testTarget(
        name: "RichPushHTTPTests",
        dependencies: ["RichPushCore", "RichPushHTTP", "RichPushTestSupport"]
    ),
]

// MARK: - Package

let package = Package(
    name: "RichPush",
    products: [
        .library(name: "RichPush", targets: ["RichPush"]),
        // VipsConverter, for `configuration.transform.converter`: a product of its own rather than re-exported by
        // RichPush, so that the engine's product stays free of the image library (as NIO ships NIOSSL apart) and
        // the two stay side by side in the layers (scripts/check-layers).
        .library(name: "RichPushTransform", targets: ["RichPushTransform"]),
        .library(name: "RichPushObjectStore", targets: ["RichPushObjectStore"]),
        .executable(name: "richpush", targets: ["richpush"]),
    ],
    targets: cTargets + libraryTargets + swiftTargets + supportTargets + testTargets,
    swiftLanguageModes: [.v6]
)
