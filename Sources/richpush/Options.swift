#if canImport(Glibc)
    import Glibc
#endif
import RichPush
import RichPushTransform

/// One option of a command, as `--help` shows it.
struct OptionSpec {
    /// The long name without dashes (`deadline`).
    let name: String
    /// The value's placeholder (`seconds`), or nil for a flag.
    let value: String?
    /// The help text, ending with its default.
    let help: String
    /// Whether it may be given more than once.
    var repeatable = false
}

/// A command-line mistake: the message names the argument; the exit code is 64 (EX_USAGE).
struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// What a command line said: option values by name, flags, and positional arguments.
struct ParsedArguments {
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func has(_ name: String) -> Bool { flags.contains(name) }

    // Numeric values are range-checked before any conversion, so that no input (NaN, an infinity, a negative,
    // 1e16) reaches one that traps; a value outside is a usage error naming the option and the range.

    /// `--name`'s value, a number of seconds (fractions allowed) within `range`; nil when it was not given.
    func seconds(_ name: String, in range: ClosedRange<Double>, note: String = "") throws(UsageError) -> Duration? {
        guard let text = value(name) else { return nil }
        // Double parses "nan", "inf" and hexadecimal too: `contains` is false for NaN and for the infinities.
        guard let seconds = Double(text), range.contains(seconds) else {
            throw UsageError("--\(name): expected a number of seconds \(Self.describe(range))\(note), got '\(text)'")
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// `--name`'s value, a whole number of `unit` within `range`; nil when it was not given.
    func wholeNumber(_ name: String, of unit: String, in range: ClosedRange<Int>) throws(UsageError) -> Int? {
        guard let text = value(name) else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError("--\(name): expected a whole number of \(unit) \(Self.describe(range)), got '\(text)'")
        }
        return number
    }

    /// A range as messages and help write it: `from 0.001 to 86400` (not `86400.0`).
    static func describe(_ range: ClosedRange<Double>) -> String {
        func bound(_ value: Double) -> String { value == value.rounded() ? String(Int64(value)) : String(value) }
        return "from \(bound(range.lowerBound)) to \(bound(range.upperBound))"
    }

    /// A range as messages and help write it: `from 1 to 10000`.
    static func describe(_ range: ClosedRange<Int>) -> String { "from \(range.lowerBound) to \(range.upperBound)" }
}

/// A command: its name, abstract, options and arguments, in the shape of swift-argument-parser's.
struct CommandSpec {
    let name: String
    let abstract: String
    let usage: String
    let arguments: [(String, String)]
    let options: [OptionSpec]
    let discussion: String

    /// Parses `arguments` against the options; `--help` is reported as a flag.
    func parse(_ arguments: [String]) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments()
        var remaining = arguments[...]
        var optionsEnded = false
        while let argument = remaining.popFirst() {
            if optionsEnded || !argument.hasPrefix("--") {
                if !optionsEnded, argument.hasPrefix("-"), argument != "-" {
                    if argument == "-h" {
                        parsed.flags.insert("help")
                        continue
                    }
                    throw UsageError("unknown option '\(argument)' (see 'richpush \(name) --help')")
                }
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            var name = String(argument.dropFirst(2))
            var inline: String? = nil
            if let equals = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if name == "help" {
                parsed.flags.insert("help")
                continue
            }
            guard let spec = options.first(where: { $0.name == name }) else {
                throw UsageError("unknown option '--\(name)' (see 'richpush \(self.name) --help')")
            }
            guard spec.value != nil else {
                if inline != nil { throw UsageError("--\(name) takes no value") }
                parsed.flags.insert(name)
                continue
            }
            guard let value = inline ?? remaining.popFirst() else {
                throw UsageError("--\(name) needs a value <\(spec.value!)>")
            }
            if !spec.repeatable, parsed.values[name] != nil {
                throw UsageError("--\(name) was given twice")
            }
            parsed.values[name, default: []].append(value)
        }
        return parsed
    }

    /// Parses `arguments`; when `--help` was asked for, prints the help instead and returns nil.
    func parseOrShowHelp(_ arguments: [String]) throws(UsageError) -> ParsedArguments? {
        let parsed = try parse(arguments)
        guard !parsed.has("help") else {
            Output.write(Array(help.utf8))
            return nil
        }
        return parsed
    }

    /// The `--help` text.
    var help: String {
        var text = "OVERVIEW: \(abstract)\n\nUSAGE: \(usage)\n"
        if !arguments.isEmpty {
            text += "\nARGUMENTS:\n"
            for (name, help) in arguments { text += Self.row(name, help) }
        }
        text += "\nOPTIONS:\n"
        for option in options {
            let left = "--\(option.name)" + (option.value.map { " <\($0)>" } ?? "")
            text += Self.row(left, option.help + (option.repeatable ? " (repeatable)" : ""))
        }
        text += Self.row("-h, --help", "Show help information.")
        if !discussion.isEmpty { text += "\n" + discussion + "\n" }
        return text
    }

    static func row(_ left: String, _ help: String) -> String {
        let padded = left.count < 26 ? left + String(repeating: " ", count: 26 - left.count) : left + "\n" + String(repeating: " ", count: 28)
        return "  " + padded + help + "\n"
    }
}

/// The options `enrich` and `stream` share, and how they become a `Configuration`.
enum SharedOptions {
    static let specs: [OptionSpec] = [
        OptionSpec(
            name: "deadline", value: "seconds",
            help: "Time each payload may take, fractions allowed, \(ParsedArguments.describe(deadlineRange)); at the deadline the best attempt is returned. (default: 25)"),
        OptionSpec(
            name: "attachments-dir", value: "dir",
            help: "Where attachment directories are made. (default: $TMPDIR/richpush)"),
        OptionSpec(name: "allow-http", value: nil, help: "Allow http as well as https, at every hop. (default: off)"),
        OptionSpec(
            name: "allow-network", value: "cidr",
            help: "Open an address range that is refused by default (loopback, private, link-local, ...). (default: none)",
            repeatable: true),
        OptionSpec(
            name: "deny-network", value: "cidr", help: "Refuse an address range; wins over --allow-network. (default: none)",
            repeatable: true),
        OptionSpec(
            name: "allow-port", value: "port[-port]",
            help: "Allow connections to a port or range besides 80, 443, 8080, 8443. (default: none)", repeatable: true),
        OptionSpec(
            name: "resolve", value: "host:port:addr", help: "Pin a name to an address, as curl's --resolve. (default: none)",
            repeatable: true),
        OptionSpec(name: "ca-bundle", value: "file", help: "Trust the CA certificates in this PEM file. (default: the system's)"),
        OptionSpec(
            name: "concurrency", value: "n",
            help: "Payloads processed at once, \(ParsedArguments.describe(concurrencyRange)). (default: 32)"),
        OptionSpec(
            name: "convention", value: "name",
            help: "Run only the named conventions, in the order given: adb_media, zego, fcm, airship, onesignal, clevertap, iterable, customerio, pushwoosh, batch, amplify, notifee, home_assistant, braze. (default: all, in that order)",
            repeatable: true),
        OptionSpec(
            name: "conventions", value: "file",
            help: "Add the conventions described in this JSON file, after the built-in ones (see the README). (default: none)"),
        OptionSpec(
            name: "route-id-key", value: "key",
            help: "A key holding the route id; given once or more, replaces the defaults. (default: id, route_id, content_id)",
            repeatable: true),
        OptionSpec(
            name: "route-url-key", value: "key",
            help: "A key holding the route's deep link; replaces the defaults. (default: deeplink, deep_link, uri, url, link, l)",
            repeatable: true),
        OptionSpec(
            name: "cache-ttl", value: "seconds",
            help: "Reuse a fetched URL for this long, then revalidate it, \(ParsedArguments.describe(cacheTTLRange)); 0 fetches every time. (default: 300)"),
        OptionSpec(
            name: "cache-max-mb", value: "n",
            help: "The most megabytes the media cache keeps, \(ParsedArguments.describe(cacheMegabytesRange)). (default: 1000)"),
        OptionSpec(
            name: "retries", value: "n",
            help: "Fetch a reference again up to n times after a refused or dropped connection, a connect timeout, 429, 502, 503 or 504, while the deadline leaves room, \(ParsedArguments.describe(retriesRange)). (default: 2)"),
        OptionSpec(
            name: "no-transcode", value: nil,
            help: "Refuse images iOS does not attach (WebP, HEIC, AVIF, SVG, TIFF, BMP) instead of converting them to JPEG or PNG. (default: off)"),
        OptionSpec(
            name: "max-dimension", value: "n",
            help: "Resize images whose longest side exceeds n pixels, \(ParsedArguments.describe(Configuration.dimensionRange)). (default: none)"),
        OptionSpec(
            name: "max-source-bytes", value: "n",
            help: "Fetch images up to n bytes to downscale them under the 10 MB image cap, from 10000000 to \(Int32.max). (default: 50000000)"),
        OptionSpec(
            name: "strip-metadata", value: nil,
            help: "Strip JPEG and PNG images that would pass through, so that no attachment keeps EXIF, XMP, IPTC or text metadata: a JPEG is re-encoded, a PNG's metadata chunks dropped (an APNG keeps its frames). (default: off)"),
        OptionSpec(
            name: "verify-images", value: nil,
            help: "Decode every JPEG, PNG and GIF once before attaching it: a PNG that does not decode whole is refused, a JPEG or GIF attached with a damaged-image problem. (default: off)"),
        OptionSpec(
            name: "max-pixels", value: "n",
            help: "Refuse images whose header declares more pixels than n before decoding any, \(ParsedArguments.describe(Configuration.pixelsRange)). (default: 50000000)"),
        OptionSpec(
            name: "publish-dir", value: "dir",
            help: "Also write each attachment, content-addressed, as dir/<sha256>.<ext> (mode 0644), and rewrite its field in the content to the --publish-url one. (default: none)"),
        OptionSpec(
            name: "publish-url", value: "url",
            help: "The URL --publish-dir is served under (http or https). (default: none)"),
        OptionSpec(
            name: "no-transform", value: nil,
            help: "Transform no image at all: attach as fetched or refuse, as with --no-transcode, and never load libvips. (default: off)"),
    ]

    /// The default of `--concurrency`: enough payloads in flight to fill the fetch loop's 64 connections with
    /// one or two references each.
    static let defaultConcurrency = 32

    /// `--deadline`: the library's range for `deadline` (checked here before the text becomes a `Duration`).
    static let deadlineRange = seconds(Configuration.deadlineRange)
    /// `--cache-ttl`: the library's range for `cache.timeToLive`.
    static let cacheTTLRange = seconds(Configuration.timeToLiveRange)
    /// `--cache-max-mb`: up to a terabyte, beyond any disk this runs beside.
    static let cacheMegabytesRange = 1...1_000_000
    /// `--retries`: up to 10; more within one deadline is hammering an origin that is down.
    static let retriesRange = Configuration.retriesRange
    /// `--concurrency`: up to 10,000 payloads in flight, 150 times what the 64 connections can serve.
    static let concurrencyRange = 1...10_000

    static func configuration(_ parsed: ParsedArguments) throws(UsageError) -> Configuration {
        var configuration = Configuration()
        if let deadline = try parsed.seconds("deadline", in: deadlineRange) { configuration.deadline = deadline }
        if let directory = parsed.value("attachments-dir") {
            guard !directory.isEmpty else { throw UsageError("--attachments-dir: the path is empty") }
            let absolute = directory.hasPrefix("/") ? directory : FileSystem.currentDirectory() + "/" + directory
            configuration.store = AttachmentStore(root: absolute)
        }
        configuration.network.allowHTTP = parsed.has("allow-http")
        var policy = AddressPolicy()
        for text in parsed.all("allow-network") {
            guard let range = CIDRRange(text) else { throw UsageError("--allow-network: '\(text)' is not an address or CIDR range") }
            policy.allowed.append(range)
        }
        for text in parsed.all("deny-network") {
            guard let range = CIDRRange(text) else { throw UsageError("--deny-network: '\(text)' is not an address or CIDR range") }
            policy.denied.append(range)
        }
        configuration.network.addressPolicy = policy
        for text in parsed.all("allow-port") {
            // Only the text is read here (a range must be LOW <= HIGH to exist); the library checks the ports.
            let bounds = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).map { Int($0) }
            guard let low = bounds.first ?? nil, let high = bounds.last ?? nil, low <= high else {
                throw UsageError("--allow-port: '\(text)' is not a port or a range LOW-HIGH within 1-65535")
            }
            configuration.network.allowedPorts.append(low...high)
        }
        configuration.network.resolve = parsed.all("resolve")
        var available = ConventionRegistry.standard
        if let file = parsed.value("conventions") {
            let bytes: [UInt8]
            switch InputReader.read(file, limit: 1 << 20) {
            case .success(let read): bytes = read
            case .failure(let error): throw UsageError("--conventions: \(error.detail)")
            }
            do {
                for convention in try ConventionFile.parse(bytes) { available.register(convention) }
            } catch {
                throw UsageError("--conventions \(file): \(error.message)")
            }
        }
        configuration.conventions = available
        let names = parsed.all("convention").flatMap { $0.split(separator: ",").map(String.init) }
        if !names.isEmpty {
            var chosen: [any MediaConvention] = []
            for name in names {
                guard let convention = available.conventions.first(where: { $0.name == name }) else {
                    let known = available.conventions.map(\.name).joined(separator: ", ")
                    throw UsageError("--convention: unknown convention '\(name)' (known: \(known))")
                }
                guard !chosen.contains(where: { $0.name == name }) else {
                    throw UsageError("--convention: '\(name)' is named twice")
                }
                chosen.append(convention)
            }
            configuration.conventions = ConventionRegistry(chosen)
        }
        if !parsed.all("route-id-key").isEmpty { configuration.routeKeys.id = parsed.all("route-id-key") }
        if !parsed.all("route-url-key").isEmpty { configuration.routeKeys.url = parsed.all("route-url-key") }
        if let timeToLive = try parsed.seconds("cache-ttl", in: cacheTTLRange, note: " (0 turns the cache off)") {
            configuration.cache.enabled = timeToLive > .zero
            configuration.cache.timeToLive = timeToLive
        }
        if let megabytes = try parsed.wholeNumber("cache-max-mb", of: "megabytes", in: cacheMegabytesRange) {
            configuration.cache.maximumBytes = megabytes * 1_000_000
        }
        if let retries = try parsed.wholeNumber("retries", of: "retries", in: retriesRange) {
            configuration.retry.retries = retries
        }
        configuration.network.caBundle = parsed.value("ca-bundle")
        try transform(parsed, into: &configuration.transform)
        configuration.publisher = try publisher(parsed)
        // One validator, the library's: its error names the field; the message names the flag that set it.
        do {
            try configuration.validate()
        } catch {
            throw UsageError("\(flag(setting: error.field) ?? error.field): \(error.detail)")
        }
        return configuration
    }

    /// The flag that sets a `Configuration` field (`network.resolve[3]` is `--resolve`); nil for fields no flag
    /// sets.
    static func flag(setting field: String) -> String? {
        switch field.split(separator: "[").first.map(String.init) ?? field {
        case "deadline": return "--deadline"
        case "store.root": return "--attachments-dir"
        case "network.allowedPorts": return "--allow-port"
        case "network.resolve": return "--resolve"
        case "network.caBundle": return "--ca-bundle"
        case "cache.timeToLive": return "--cache-ttl"
        case "cache.maximumBytes": return "--cache-max-mb"
        case "retry.retries": return "--retries"
        case "transform.maximumDimension": return "--max-dimension"
        case "transform.maximumSourceBytes": return "--max-source-bytes"
        case "transform.maximumPixels": return "--max-pixels"
        default: return nil
        }
    }

    /// `--publish-dir` and `--publish-url`, given together, or neither.
    static func publisher(_ parsed: ParsedArguments) throws(UsageError) -> (any MediaPublisher)? {
        switch (parsed.value("publish-dir"), parsed.value("publish-url")) {
        case (nil, nil):
            return nil
        case (let directory?, let url?):
            guard !directory.isEmpty else { throw UsageError("--publish-dir: the path is empty") }
            guard url.hasPrefix("https://") || url.hasPrefix("http://"), url.count > 8 else {
                throw UsageError("--publish-url: '\(url)' is not an http or https URL")
            }
            let absolute = directory.hasPrefix("/") ? directory : FileSystem.currentDirectory() + "/" + directory
            return DirectoryPublisher(directory: absolute, baseURL: url)
        case (nil, _):
            throw UsageError("--publish-url: needs --publish-dir")
        case (_, nil):
            throw UsageError("--publish-dir: needs --publish-url")
        }
    }

    /// The transformation options; libvips's converter unless `--no-transform`.
    static func transform(_ parsed: ParsedArguments, into transform: inout Configuration.Transform) throws(UsageError) {
        if parsed.has("no-transform") {
            let conflicting = ["no-transcode", "strip-metadata", "verify-images"].filter(parsed.has)
                + ["max-dimension", "max-source-bytes", "max-pixels"].filter { parsed.value($0) != nil }
            if let first = conflicting.first { throw UsageError("--no-transform: --\(first) needs the transformation") }
            transform.converter = nil
            return
        }
        transform.converter = VipsConverter()
        transform.transcode = !parsed.has("no-transcode")
        transform.stripMetadata = parsed.has("strip-metadata")
        transform.verifyImages = parsed.has("verify-images")
        transform.maximumDimension = try parsed.wholeNumber("max-dimension", of: "pixels", in: Configuration.dimensionRange)
        if let bytes = try parsed.wholeNumber("max-source-bytes", of: "bytes", in: 1...Int(Int32.max)) {
            transform.maximumSourceBytes = bytes
        }
        if let pixels = try parsed.wholeNumber("max-pixels", of: "pixels", in: Configuration.pixelsRange) {
            transform.maximumPixels = pixels
        }
    }

    /// A range of durations as the seconds the options take.
    static func seconds(_ range: ClosedRange<Duration>) -> ClosedRange<Double> {
        range.lowerBound.inSeconds...range.upperBound.inSeconds
    }

    static func concurrency(_ parsed: ParsedArguments) throws(UsageError) -> Int {
        try parsed.wholeNumber("concurrency", of: "payloads", in: concurrencyRange) ?? defaultConcurrency
    }
}
