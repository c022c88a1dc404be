import RichPush
import RichPushTransform

/// The options that decide how each reference is found, fetched and judged: all that `explain` reads, and within
/// `EngineOptions` part of what every command that attaches reads.
struct FetchOptions: ParsableArguments {
    /// `--deadline`, declared with the default of the command that reads it (`preflight`'s is longer).
    let deadlineOption: Option<Duration>
    var deadline: Duration { deadlineOption.wrappedValue }

    @OptionGroup var store: StoreOptions

    @Flag("allow-http", help: "Allow http as well as https, at every hop.", field: "network.allowHTTP")
    var allowHTTP: Bool

    @Option(
        "allow-network", .cidr,
        help: "Open an address range that is refused by default (loopback, private, link-local, ...).")
    var allowedNetworks: [CIDRRange] = []

    @Option("deny-network", .cidr, help: "Refuse an address range; wins over --allow-network.")
    var deniedNetworks: [CIDRRange] = []

    @Option(
        "allow-port", .ports, help: "Allow connections to a port or range besides \(FetchOptions.defaultPorts).",
        field: "network.allowedPorts")
    var allowedPorts: [ClosedRange<Int>] = []

    @Option(
        "resolve", .text("host:port:addr"), help: "Pin a name to an address, as curl's --resolve.",
        field: "network.resolve")
    var resolve: [String] = []

    @Option(
        "ca-bundle", .text("file"), help: "Trust the CA certificates in this PEM file instead of the system's.",
        default: "the system's",
        field: "network.caBundle")
    var caBundle: String?

    @Option(
        "convention", .text("name"),
        help: "Run only the named conventions, in the order given: \(FetchOptions.conventionNames).",
        default: "all, in that order")
    var conventionNames: [String] = []

    @Option(
        "conventions", .text("file"),
        help: "Add the conventions described in this JSON file, after the built-in ones (see docs/conventions.md).")
    var conventionFile: String?

    @Flag(
        "no-transcode",
        help: "Refuse images iOS does not attach (WebP, HEIC, AVIF, SVG, TIFF, BMP) instead of converting them to "
            + "JPEG or PNG.")
    var noTranscode: Bool

    @Option(
        "max-source-bytes", .whole("bytes", in: FetchOptions.sourceBytesRange),
        help: "Fetch images up to n bytes to downscale them under the \(FetchOptions.imageCap) image cap.",
        field: "transform.maximumSourceBytes")
    var maximumSourceBytes: Int = Enricher.Configuration().transform.maximumSourceBytes

    @Option(
        "retries", .whole("retries", in: Enricher.Configuration.retriesRange),
        help: "Fetch a reference again up to n times after a refused or dropped connection, a connect timeout, 429, "
            + "502, 503 or 504, while the deadline leaves room.",
        field: "retry.retries")
    var retries: Int = Enricher.Configuration().retry.retries

    @Option(
        "max-pixels", .whole("pixels", in: Enricher.Configuration.pixelsRange),
        help: "Refuse images whose header declares more pixels than n before decoding any.",
        field: "transform.maximumPixels")
    var maximumPixels: Int = Enricher.Configuration().transform.maximumPixels

    @Option(
        "android-max-dimension", .whole("pixels", in: Enricher.Configuration.dimensionRange),
        help: "The longest side of an FCM message's Android image (FCM's Android code decodes it whole).",
        field: "transform.androidMaximumDimension")
    var androidMaximumDimension: Int = Enricher.Configuration().transform.androidMaximumDimension

    @Flag(
        "no-transform",
        help: "Transform no image at all: attach as fetched or refuse, as with --no-transcode, and never load libvips.")
    var noTransform: Bool

    /// The options with the library's defaults.
    init() { self.init(deadline: Enricher.Configuration().timeout) }

    /// The options with `deadline` as `--deadline`'s default (what help shows and the command runs with).
    init(deadline: Duration) {
        deadlineOption = Option(
            wrappedValue: deadline, "deadline", .seconds(in: Enricher.Configuration.timeoutRange),
            help: "Time each payload may take, fractions allowed; at the deadline the best attempt is returned.",
            field: "timeout")
    }

    /// `--max-source-bytes`: from the image cap, below which the library refuses it, to 2 GiB - 1.
    static let sourceBytesRange = Enricher.Configuration().limits.imageBytes...Int(Int32.max)
    /// The image cap as help writes it: `10 MB`.
    static let imageCap = "\(Enricher.Configuration().limits.imageBytes / 1_000_000) MB"
    /// The ports allowed without `--allow-port`: `80, 443, 8080, 8443`.
    static let defaultPorts = Enricher.Configuration().network.allowedPorts.map {
        $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)-\($0.upperBound)"
    }.joined(separator: ", ")
    /// The built-in conventions, in their order.
    static let conventionNames = ConventionRegistry.standard.conventions.map(\.name).joined(separator: ", ")

    /// The configuration these options describe, checked: what `explain` runs with.
    func configuration() throws(UsageError) -> Enricher.Configuration {
        var configuration = Enricher.Configuration()
        try apply(to: &configuration)
        return try validated(configuration)
    }

    /// Sets the fields these options decide in `configuration`.
    func apply(to configuration: inout Enricher.Configuration) throws(UsageError) {
        configuration.timeout = deadline
        if let root = try store.root() { configuration.store = AttachmentStore(root: root) }
        configuration.network.allowHTTP = allowHTTP
        configuration.network.addressPolicy.allowed += allowedNetworks
        configuration.network.addressPolicy.denied += deniedNetworks
        configuration.network.allowedPorts += allowedPorts
        configuration.network.resolve = resolve
        configuration.network.caBundle = caBundle
        configuration.conventions = try conventions()
        configuration.retry.retries = retries
        configuration.transform.androidMaximumDimension = androidMaximumDimension
        if noTransform {
            try refuseWithoutTransformation([$noTranscode, $maximumSourceBytes, $maximumPixels])
            configuration.transform.converter = nil
            return
        }
        configuration.transform.converter = VipsConverter()
        // Its own binary, whatever path it was started by (and even once replaced on disk): SVG renders in a child
        // process each, killed at its payload's deadline.
        configuration.transform.svgRenderer = "/proc/self/exe"
        configuration.transform.transcode = !noTranscode
        configuration.transform.maximumSourceBytes = maximumSourceBytes
        configuration.transform.maximumPixels = maximumPixels
    }

    /// The conventions run: the built-in ones and `--conventions`'s, or those `--convention` names, in its order.
    private func conventions() throws(UsageError) -> ConventionRegistry {
        var available = ConventionRegistry.standard
        if let file = conventionFile {
            let bytes: [UInt8]
            switch InputReader.read(file, limit: 1 << 20) {
            case .success(let read): bytes = read
            case .failure(let error): throw UsageError("\($conventionFile.flag): \(error.detail)")
            }
            do {
                available.register(contentsOf: try ConventionFile.parse(bytes))
            } catch {
                throw UsageError("\($conventionFile.flag) \(file): \(error.detail)")
            }
        }
        let names = conventionNames.flatMap { $0.split(separator: ",").map(String.init) }
        guard !names.isEmpty else { return available }
        // By name, through an index: a file may add thousands, and the list may name them all.
        let all = available.conventions
        let positions = Dictionary(all.indices.map { (all[$0].name, $0) }, uniquingKeysWith: { first, _ in first })
        var chosen: [any MediaConvention] = []
        var taken = Set<String>()
        for name in names {
            guard let index = positions[name] else {
                throw UsageError("\($conventionNames.flag): unknown convention '\(name)' (known: \(Self.known(all)))")
            }
            guard taken.insert(name).inserted else {
                throw UsageError("\($conventionNames.flag): '\(name)' is named twice")
            }
            chosen.append(all[index])
        }
        return ConventionRegistry(chosen)
    }

    /// The names of `conventions` for a message: the first 40, then how many more (a file may add thousands).
    private static func known(_ conventions: [any MediaConvention]) -> String {
        let shown = conventions.prefix(40).map(\.name).joined(separator: ", ")
        return conventions.count > 40 ? shown + " and \(conventions.count - 40) more" : shown
    }

    /// With `--no-transform`, an option of the transformation given is a mistake: names the first.
    func refuseWithoutTransformation(_ options: [any NamedOption]) throws(UsageError) {
        if let first = options.first(where: \.isGiven) {
            throw UsageError("\($noTransform.flag): \(first.flag) needs the transformation")
        }
    }
}
