#if canImport(Glibc)
    import Glibc
#endif

extension Enricher {
    /// Everything RichPush can be told; every default is documented with its reason (and in docs/library.md).
    public struct Configuration: Sendable {
        /// How many payloads the runners built on the engine (`stream`, `serve`'s NDJSON requests, `worker`) process
        /// at once unless told otherwise: 32, enough to fill the fetch loop's 64 connections with one or two
        /// references each.
        package static let defaultConcurrency = 32

        /// How transfers are made and where they may go: `NetworkSettings`.
        public typealias Network = NetworkSettings

        /// Bounds on sizes and counts: `LimitSettings`.
        public typealias Limits = LimitSettings

        /// The media cache shared by the payloads of one engine: `CacheSettings`.
        public typealias Cache = CacheSettings

        /// What happens to an image between its download and its attachment: `TransformSettings`.
        public typealias Transform = TransformSettings

        /// Network settings.
        public var network = Network()
        /// Media cache settings.
        public var cache = Cache()
        /// Which keys hold a route (id, deep link). Defaults: see `DeepLinkRoute.Keys`.
        public var routeKeys = DeepLinkRoute.Keys()
        /// Size and count bounds.
        public var limits = Limits()
        /// Where attachments go. Default `$TMPDIR/richpush-<uid>` (`AttachmentStore.defaultRoot`), per user.
        public var store = AttachmentStore(root: AttachmentStore.defaultRoot)
        /// How long each payload may take: its deadline is this long after `enrich` is called (an interval, not
        /// a point in time; `enrich(_:deadline:)` takes the point). Default 25 s: the phone gives an extension about
        /// 30 s, and a stage in front of it should hand back its best attempt with time to spare.
        public var timeout: Duration = .seconds(25)
        /// The old name of `timeout`, which named an interval as a point in time; it reads and writes `timeout`.
        @available(
            *, deprecated, renamed: "timeout", message: "an interval: 'timeout'; to be removed in the next release"
        )
        public var deadline: Duration {
            get { timeout }
            set { timeout = newValue }
        }
        /// The conventions applied, in order. Default: `ConventionRegistry.standard`.
        public var conventions = ConventionRegistry.standard
        /// When a failed fetch is made again within the deadline. Defaults: see `RetryPolicy` (2 retries).
        public var retry = RetryPolicy()
        /// What happens to images between download and attachment. Default: nothing (no converter); see `Transform`.
        public var transform = Transform()
        /// Where attachments are published for devices to fetch, their vendor's field in the content rewritten to the
        /// published URL. Default nil: nothing is published, the content keeps the sender's URLs.
        public var publisher: (any MediaPublisher)? = nil
        /// Where the engine reports retries, failed publications, its shutdown and (at `debug`) each payload, for a
        /// host with logging of its own: see `Enricher.LogHandler`. Default nil: nothing is reported (the library
        /// writes no line anywhere; results and `statistics` carry the rest).
        public var logHandler: (any Enricher.LogHandler)? = nil

        /// How the engine's messages name a setting that would lift a refusal (`network.allowHTTP`). Default: each
        /// field's path here; a host gives its own names (the CLI gives its flags, `--allow-http`).
        public var settingNames = SettingNames()

        /// The documented defaults.
        public init() {}
    }
}

// MARK: - Validation

extension Enricher.Configuration {
    /// The range of `timeout`: from a millisecond, the resolution deadlines are kept at, to a day, beyond any push
    /// pipeline.
    public static let timeoutRange: ClosedRange<Duration> = .milliseconds(1) ... .seconds(86_400)
    /// The old name of `timeoutRange`.
    @available(*, deprecated, renamed: "timeoutRange", message: "to be removed in the next release")
    public static var deadlineRange: ClosedRange<Duration> { timeoutRange }
    /// The range of `network.connectTimeout`: as `timeoutRange`.
    public static let connectTimeoutRange = timeoutRange
    /// The range of `network.lowSpeedWindow`: curl counts it in whole seconds (CURLOPT_LOW_SPEED_TIME), from 1,
    /// to a day.
    public static let lowSpeedWindowRange: ClosedRange<Duration> = .seconds(1) ... .seconds(86_400)
    /// The range of `cache.timeToLive`: up to a year; a campaign image does not live longer.
    public static let timeToLiveRange: ClosedRange<Duration> = .zero ... .seconds(31_536_000)
    /// The ports `network.allowedPorts` and `network.resolve` may name.
    public static let portRange = 1...65535
    /// The range of `limits.payload.maximumBytes`: a tape entry addresses at most 2 GiB - 1.
    public static let payloadBytesRange = 1...Int(Int32.max)
    /// The range of `limits.payload.maximumDepth`: four times the default; the parser recurses once a level.
    public static let payloadDepthRange = 1...256
    /// The range of `limits.sniffBytes`: up to 1 MiB, held in memory per transfer until the type is known.
    public static let sniffBytesRange = 1...(1 << 20)
    /// The range of `limits.heldBodyBytes` and `limits.heldBytes`: none, up to 1 GiB.
    public static let heldBytesRange = 0...(1 << 30)
    /// The range of `network.maximumRedirects`: curl's own tool stops at 50.
    public static let redirectsRange = 0...50
    /// The range of `retry.retries`: up to 10 retries, which the deadline bounds long before.
    public static let retriesRange = 0...10
    /// The range of `retry.initialBackoff`, `retry.maximumBackoff` and `retry.minimumTimeLeft`: as `timeoutRange`,
    /// with zero allowed.
    public static let backoffRange: ClosedRange<Duration> = .zero ... .seconds(86_400)

    /// Checks every field that can be wrong, in declaration order; the first wrong one is thrown.
    /// - Throws: `ConfigurationError` naming the field (`limits.maximumReferences`), with a stable code.
    public func validate() throws(ConfigurationError) {
        try Self.check("timeout", timeout, in: Self.timeoutRange)
        try network.validate()
        try Self.check("limits.imageBytes", limits.imageBytes, atLeast: 1)
        try Self.check("limits.audioBytes", limits.audioBytes, atLeast: 1)
        try Self.check("limits.videoBytes", limits.videoBytes, atLeast: 1)
        try Self.check("limits.sniffBytes", limits.sniffBytes, in: Self.sniffBytesRange)
        try Self.check("limits.heldBodyBytes", limits.heldBodyBytes, in: Self.heldBytesRange)
        try Self.check("limits.heldBytes", limits.heldBytes, in: Self.heldBytesRange)
        try Self.check("limits.maximumHeaderBytes", limits.maximumHeaderBytes, atLeast: 1)
        try Self.check("limits.maximumReferences", limits.maximumReferences, atLeast: 1)
        try Self.check("limits.payload.maximumBytes", limits.payload.maximumBytes, in: Self.payloadBytesRange)
        try Self.check("limits.payload.maximumDepth", limits.payload.maximumDepth, in: Self.payloadDepthRange)
        try Self.check("cache.timeToLive", cache.timeToLive, in: Self.timeToLiveRange)
        try Self.check("cache.maximumEntries", cache.maximumEntries, atLeast: 1)
        try Self.check("cache.maximumBytes", cache.maximumBytes, atLeast: 1)
        try Self.check("retry.retries", retry.retries, in: Self.retriesRange)
        try Self.check("retry.initialBackoff", retry.initialBackoff, in: Self.backoffRange)
        try Self.check("retry.maximumBackoff", retry.maximumBackoff, in: Self.backoffRange)
        try Self.check("retry.minimumTimeLeft", retry.minimumTimeLeft, in: Self.backoffRange)
        try transform.validate(imageBytes: limits.imageBytes)
        guard store.root.hasPrefix("/") else {
            // Nobody gave the default root: its TMPDIR is named.
            let cause =
                store.root == AttachmentStore.defaultRoot ? AttachmentStore.defaultRootProblem.map { "; \($0)" } : nil
            throw ConfigurationError(
                field: "store.root", code: .malformed,
                detail: "'\(TerminalText.printable(store.root))' is not an absolute path (attachment paths handed back "
                    + "are absolute)"
                    + (cause ?? ""))
        }
    }

    static func check(_ field: String, _ value: Int, atLeast minimum: Int) throws(ConfigurationError) {
        guard value < minimum else { return }
        throw ConfigurationError(field: field, code: .outOfRange, detail: "expected \(minimum) or more, got \(value)")
    }

    static func check(_ field: String, _ value: Int, in range: ClosedRange<Int>) throws(ConfigurationError) {
        guard !range.contains(value) else { return }
        throw ConfigurationError(
            field: field, code: .outOfRange,
            detail: "expected from \(range.lowerBound) to \(range.upperBound), got \(value)")
    }

    static func check(_ field: String, _ value: Duration, in range: ClosedRange<Duration>) throws(ConfigurationError) {
        guard !range.contains(value) else { return }
        throw ConfigurationError(
            field: field, code: .outOfRange,
            detail:
                "expected a number of seconds from \(seconds(range.lowerBound)) to \(seconds(range.upperBound)), got "
                + "\(seconds(value))"
        )
    }

    /// A duration as a number of seconds, to the millisecond: `0.001`, `86400`, `2.5`.
    static func seconds(_ duration: Duration) -> String {
        let (whole, attoseconds) = duration.components
        let milliseconds = attoseconds / 1_000_000_000_000_000
        guard milliseconds != 0 else { return String(whole) }
        var fraction = String(abs(milliseconds))
        fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return (whole == 0 && duration < .zero ? "-" : "") + "\(whole).\(fraction)"
    }
}

extension Enricher.Configuration.Network {
    /// Checks the network fields; see `Enricher.Configuration.validate()`.
    func validate() throws(ConfigurationError) {
        try Enricher.Configuration.check(
            "network.maximumRedirects", maximumRedirects, in: Enricher.Configuration.redirectsRange)
        try Enricher.Configuration.check(
            "network.connectTimeout", connectTimeout, in: Enricher.Configuration.connectTimeoutRange)
        try Enricher.Configuration.check("network.lowSpeedBytesPerSecond", lowSpeedBytesPerSecond, atLeast: 0)
        try Enricher.Configuration.check(
            "network.lowSpeedWindow", lowSpeedWindow, in: Enricher.Configuration.lowSpeedWindowRange)
        let ports = Enricher.Configuration.portRange
        for (index, range) in allowedPorts.enumerated()
        where !ports.contains(range.lowerBound) || !ports.contains(range.upperBound) {
            throw ConfigurationError(
                field: "network.allowedPorts[\(index)]", code: .outOfRange,
                detail:
                    "\(range.lowerBound)-\(range.upperBound) is not a port or a range within "
                    + "\(ports.lowerBound)-\(ports.upperBound)"
            )
        }
        for (index, entry) in resolve.enumerated() where !Self.isResolveEntry(entry) {
            throw ConfigurationError(
                field: "network.resolve[\(index)]", code: .malformed,
                detail:
                    "'\(entry)' is not HOST:PORT:ADDRESS[,ADDRESS...] with PORT within "
                    + "\(ports.lowerBound)-\(ports.upperBound)"
            )
        }
        if let caBundle, let problem = FileSystem.certificateBundleProblem(caBundle) {
            throw ConfigurationError(field: "network.caBundle", code: problem.code, detail: problem.detail)
        }
        try Enricher.Configuration.check("network.maximumURLLength", maximumURLLength, atLeast: 1)
        try Enricher.Configuration.check("network.maximumConnections", maximumConnections, atLeast: 1)
        try Enricher.Configuration.check("network.maximumConnectionsPerHost", maximumConnectionsPerHost, atLeast: 1)
        // Sent as a header line: a CR or LF would start another header.
        if userAgent.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw ConfigurationError(
                field: "network.userAgent", code: .malformed, detail: "it contains a control character")
        }
    }

    /// curl's `--resolve` form: HOST:PORT:ADDRESS[,ADDRESS...], IPv6 addresses in brackets. A bad entry given to
    /// curl would fail every transfer later, far from its cause.
    static func isResolveEntry(_ entry: String) -> Bool {
        let parts = entry.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, let port = Int(parts[1]),
            Enricher.Configuration.portRange.contains(port)
        else { return false }
        return parts[2].split(separator: ",", omittingEmptySubsequences: false).allSatisfy {
            IPAddress(String($0)) != nil
        }
    }
}

extension Enricher.Configuration {
    /// The range of `transform.maximumDimension`: from an icon to libvips's largest coordinate.
    public static let dimensionRange = 16...10_000_000
    /// The range of `transform.maximumPixels`.
    public static let pixelsRange = 1...(1 << 40)
    /// The range of `transform.concurrency`.
    public static let transformConcurrencyRange = 1...64
    /// The range of `transform.jpegQuality`.
    public static let jpegQualityRange = 1...100
}

extension Enricher.Configuration.Transform {
    /// Checks the transformation fields; see `Enricher.Configuration.validate()`. `imageBytes` is `limits.imageBytes`.
    func validate(imageBytes: Int) throws(ConfigurationError) {
        if let maximumDimension {
            try Enricher.Configuration.check(
                "transform.maximumDimension", maximumDimension, in: Enricher.Configuration.dimensionRange)
        }
        try Enricher.Configuration.check("transform.maximumSourceBytes", maximumSourceBytes, atLeast: imageBytes)
        try Enricher.Configuration.check(
            "transform.maximumPixels", maximumPixels, in: Enricher.Configuration.pixelsRange)
        try Enricher.Configuration.check(
            "transform.concurrency", concurrency, in: Enricher.Configuration.transformConcurrencyRange)
        try Enricher.Configuration.check(
            "transform.jpegQuality", jpegQuality, in: Enricher.Configuration.jpegQualityRange)
        try Enricher.Configuration.check(
            "transform.androidMaximumDimension", androidMaximumDimension, in: Enricher.Configuration.dimensionRange)
        if let svgRenderer {
            // Spawned by its path, at each SVG: a relative one would follow the working directory.
            guard svgRenderer.hasPrefix("/") else {
                throw ConfigurationError(
                    field: "transform.svgRenderer", code: .malformed, detail: "'\(svgRenderer)' is not an absolute path"
                )
            }
            guard access(svgRenderer, X_OK) == 0, !FileSystem.isDirectory(svgRenderer) else {
                throw ConfigurationError(
                    field: "transform.svgRenderer", code: .unreadable, detail: "cannot execute '\(svgRenderer)'")
            }
        }
    }
}
