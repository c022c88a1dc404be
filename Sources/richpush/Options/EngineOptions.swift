import RichPush

/// The options of every command that attaches (`enrich`, `stream`, `serve`, `worker`): how references are fetched
/// and judged (`FetchOptions`, as `explain` reads them), how many payloads run at once, routes, the media cache,
/// retries, what the transformation does, and publishing.
struct EngineOptions: ParsableArguments {
    @OptionGroup var fetch: FetchOptions

    @Option("concurrency", .whole("payloads", in: EngineOptions.concurrencyRange), help: "Payloads processed at once.")
    var concurrency: Int = Enricher.Configuration.defaultConcurrency

    @Option(
        "route-id-key", .text("key"), help: "A key holding the route id; given once or more, replaces the defaults.")
    var routeIDKeys: [String] = DeepLinkRoute.Keys().id

    @Option("route-url-key", .text("key"), help: "A key holding the route's deep link; replaces the defaults.")
    var routeURLKeys: [String] = DeepLinkRoute.Keys().url

    @Option(
        "cache-ttl", .seconds(in: Enricher.Configuration.timeToLiveRange, note: " (0 turns the cache off)"),
        help: "Reuse a fetched URL for this long, then revalidate it; 0 fetches every time.", field: "cache.timeToLive")
    var cacheTimeToLive: Duration = Enricher.Configuration().cache.timeToLive

    @Option(
        "cache-max-mb", .whole("megabytes", in: EngineOptions.cacheMegabytesRange),
        help: "The most megabytes the media cache keeps.", field: "cache.maximumBytes")
    var cacheMegabytes: Int = Enricher.Configuration().cache.maximumBytes / 1_000_000

    @Option(
        "max-dimension", .whole("pixels", in: Enricher.Configuration.dimensionRange),
        help: "Resize images whose longest side exceeds n pixels.", field: "transform.maximumDimension")
    var maximumDimension: Int? = Enricher.Configuration().transform.maximumDimension

    @Flag(
        "strip-metadata",
        help: "Strip JPEG and PNG images that would pass through, so that no attachment keeps EXIF, XMP, IPTC or text "
            + "metadata: a JPEG is re-encoded, a PNG's metadata chunks dropped (an APNG keeps its frames).")
    var stripMetadata: Bool

    @Flag(
        "verify-images",
        help: "Decode every JPEG, PNG and GIF once before attaching it: a PNG that does not decode whole is refused, "
            + "a JPEG or GIF attached with a damaged-image problem.")
    var verifyImages: Bool

    @OptionGroup var publish: PublishOptions

    init() {}

    /// The options with `deadline` as `--deadline`'s default.
    init(deadline: Duration) { _fetch = OptionGroup(FetchOptions(deadline: deadline)) }

    /// `--concurrency`: up to 10,000 payloads in flight, 150 times what the 64 connections can serve.
    static let concurrencyRange = 1...10_000
    /// `--cache-max-mb`: up to a terabyte, beyond any disk this runs beside.
    static let cacheMegabytesRange = 1...1_000_000

    /// The configuration these options describe, checked.
    func configuration() throws(UsageError) -> Enricher.Configuration {
        var configuration = Enricher.Configuration()
        try fetch.apply(to: &configuration)
        configuration.routeKeys.id = routeIDKeys
        configuration.routeKeys.url = routeURLKeys
        configuration.cache.enabled = cacheTimeToLive > .zero
        configuration.cache.timeToLive = cacheTimeToLive
        configuration.cache.maximumBytes = cacheMegabytes * 1_000_000
        if fetch.noTransform {
            try fetch.refuseWithoutTransformation([$stripMetadata, $verifyImages, $maximumDimension])
        } else {
            configuration.transform.stripMetadata = stripMetadata
            configuration.transform.verifyImages = verifyImages
            configuration.transform.maximumDimension = maximumDimension
        }
        configuration.publisher = try publish.publisher()
        return try validated(configuration)
    }
}
