import RichPush
import RichPushServer

#if canImport(Glibc)
    import Glibc
#endif

/// `serve --tenants FILE`: `{"tenants": [{"name": ..., "token_sha256": ..., <overrides>}, ...]}`, read and checked
/// into the tenants' definitions.
///
/// A tenant's overrides are the server's engine options, each named as its flag with underscores (`allow_network`,
/// `publish_dir`, `no_transcode`): a string or number is the option's value, an array its values (a repeatable
/// option), `true` a flag given, `false` one not given. An override replaces the server's option of that name (its
/// every value); the tenant's configuration is then the server's command line with the overrides, read by the same
/// options, checked by the library's one validator: a tenant accepts exactly what `serve` accepts, with the same
/// messages, each naming the tenant and the field. Besides them: `max_in_flight` and `rate`
/// (`{"per_second": ..., "burst": ...}`).
struct TenantsFile {
    /// The options a tenant may not override: the attachments root every tenant's engine shares (the service serves
    /// attachments from one root), and how many lines of one NDJSON request run at once (the server's).
    static let serverOnly: Set<String> = ["attachments-dir", "concurrency"]
    /// The options that say where a tenant publishes: the directory, the store (its location, endpoint and region,
    /// which names the endpoint by default) and the URL. A tenant that gives none of them publishes under the
    /// server's, in a prefix of its own (its name), with its other publishing options (how: its credentials, trust,
    /// path style, Cache-Control, uploads at once, existence check) applied there.
    static let publishing: Set<String> = ["publish-dir", "publish-s3", "publish-url", "s3-endpoint", "s3-region"]
    /// The largest tenants file read: 16 MiB, some thousands of tenants with long network lists.
    static let maximumBytes = 16 << 20
    /// `rate.per_second`: from one request in about 11.6 days (0.000001) to a million a second.
    static let rateRange = 0.000_001...1_000_000.0
    /// `rate.burst`: up to a million.
    static let burstRange = 1...1_000_000

    /// The file's path, as given.
    let path: String
    /// The server's command line (after `serve`): each tenant's options are read from it with its overrides.
    let serverArguments: [String]

    /// The tenants' definitions.
    /// - Throws: `UsageError` naming the file, and the tenant and field that are wrong.
    func definitions() throws(UsageError) -> [Tenant.Definition] {
        let bytes = try read()
        let document: PushPayload.JSON
        do {
            var limits = JSONParser.Limits()
            limits.maximumBytes = Self.maximumBytes
            document = try JSONParser(limits: limits).parse(bytes)
        } catch {
            throw UsageError("--tenants \(path): \(error.detail)")
        }
        guard case .object(let top) = document, case .array(let entries)? = top["tenants"] else {
            throw UsageError("--tenants \(path): expected an object {\"tenants\": [ ... ]}")
        }
        if let other = top.members.first(where: { $0.key.value != "tenants" }) {
            throw UsageError("--tenants \(path): unknown field '\(other.key.value)' (expected only \"tenants\")")
        }
        var definitions: [Tenant.Definition] = []
        // What every tenant is read against, read once (each was 40% of loading a tenant).
        let shared = Shared(server: try command(serverArguments))
        // Sets, not a search of the definitions so far: 20,000 tenants took 113 s to check that way.
        var names = Set<String>()
        var digests = Set<[UInt8]>()
        for (index, entry) in entries.enumerated() {
            let definition = try self.definition(entry, index: index, shared)
            guard names.insert(definition.name).inserted else {
                throw UsageError("--tenants \(path): tenant '\(definition.name)': name: given to two tenants")
            }
            guard digests.insert(definition.tokenSHA256).inserted else {
                throw UsageError(
                    "--tenants \(path): tenant '\(definition.name)': token_sha256: the same as another tenant's")
            }
            definitions.append(definition)
        }
        return definitions
    }

    /// The file's bytes: a regular file (a link to one is followed: a mounted configuration is one), opened without
    /// blocking; a FIFO, device or directory is refused at once, never waited on (a FIFO held open by a writer had
    /// blocked the start, and every reload after it on the signals' queue).
    private func read() throws(UsageError) -> [UInt8] {
        let descriptor: Int32
        switch FileSystem.openRegularFile(path, followingLinks: true) {
        case .success(let opened): descriptor = opened
        case .failure(let failure):
            let reason = failure.code == EINVAL ? "not a regular file" : String(cString: strerror(failure.code))
            throw UsageError("--tenants: \(path): \(reason)")
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var tooLarge = false
        var buffer = FileSystem.readBuffer(count: 64 * 1024)
        let failed = FileSystem.readChunks(descriptor, buffer: &buffer) { chunk in
            bytes += chunk
            tooLarge = bytes.count > Self.maximumBytes
            return !tooLarge
        }
        if let failed { throw UsageError("--tenants: \(path): \(String(cString: strerror(failed)))") }
        if tooLarge { throw UsageError("--tenants: \(path) is larger than \(Self.maximumBytes) bytes") }
        return bytes
    }

    /// What every tenant's definition is read against: the server's command line read, and the options' declarations.
    private struct Shared {
        let server: ServeCommand
        let engine = EngineOptions.declarations
        let serve = ServeCommand.declarations
    }

    private func definition(
        _ entry: PushPayload.JSON, index: Int, _ shared: Shared
    ) throws(UsageError) -> Tenant.Definition {
        guard case .object(let object) = entry else {
            throw UsageError("--tenants \(path): tenants[\(index)]: expected an object, got \(entry.kindDescription)")
        }
        guard let name = object["name"]?.stringValue, Self.isName(name) else {
            throw UsageError(
                "--tenants \(path): tenants[\(index)]: name: expected 1 to 64 letters, digits, '.', '_' or '-', "
                    + "starting with a letter or digit")
        }
        func fail(_ field: String, _ detail: String) -> UsageError {
            UsageError("--tenants \(path): tenant '\(name)': \(field): \(detail)")
        }
        guard let hex = object["token_sha256"]?.stringValue, let digest = Self.digest(hex) else {
            throw fail(
                "token_sha256", "expected the 64 lowercase hex digits of the token's SHA-256 (sha256sum of the token)")
        }
        var maximumInFlight: Int?
        var rate: TokenBucket.Rate?
        var overrides: [(flag: String, words: [String])] = []
        for (key, value) in object.members.map({ ($0.key.value, $0.value) }) {
            switch key {
            case "name", "token_sha256": continue
            case "max_in_flight":
                guard case .number(let text) = value, let number = Int(text),
                    ServeCommand.inFlightRange.contains(number)
                else {
                    throw fail(key, "expected a whole number within \(ServeCommand.inFlightRange)")
                }
                maximumInFlight = number
            case "rate":
                guard case .object(let fields) = value,
                    case .number(let perSecondText)? = fields["per_second"], let perSecond = Double(perSecondText),
                    perSecond > 0, Self.rateRange.contains(perSecond),
                    case .number(let burstText)? = fields["burst"], let burst = Int(burstText),
                    Self.burstRange.contains(burst), fields.members.count == 2
                else {
                    throw fail(
                        key,
                        "expected {\"per_second\": a number from 0.000001 up to \(Int(Self.rateRange.upperBound)), "
                            + "\"burst\": a whole number within \(Self.burstRange)}")
                }
                rate = TokenBucket.Rate(perSecond: perSecond, burst: burst)
            default:
                let flag = key.replacingAll("_", "-")
                guard !key.contains("-"), let declaration = shared.engine.first(where: { $0.name == flag }) else {
                    throw fail(
                        key,
                        "unknown field (a tenant's fields are name, token_sha256, max_in_flight, rate and "
                            + "the server's engine options, named with underscores: allow_network, deadline, ...)")
                }
                guard !Self.serverOnly.contains(flag) else { throw fail(key, "is the server's, for every tenant") }
                overrides.append((flag, try Self.words(value, declaration) { fail(key, $0) }))
            }
        }
        let overridden = Set(overrides.map(\.flag))
        var arguments = Self.removing(overridden, from: serverArguments, declarations: shared.serve)
        for (_, words) in overrides { arguments += words }
        let server = shared.server
        if overridden.isDisjoint(with: Self.publishing) {
            let prefixed = Self.publishingPrefix(of: server, name: name)
            arguments =
                Self.removing(
                    ["publish-dir", "publish-url", "publish-s3"], from: arguments, declarations: shared.serve)
                + prefixed
        }
        let configuration: Enricher.Configuration
        do {
            configuration = try command(arguments).engine.configuration()
        } catch {
            throw fail(Self.field(of: error.detail, among: overridden), Self.renaming(error.detail, overridden))
        }
        let serverDeadline = server.engine.fetch.deadline
        guard configuration.timeout <= serverDeadline else {
            throw fail(
                "deadline",
                "\(configuration.timeout.inSeconds) s is beyond the server's --deadline, \(serverDeadline.inSeconds) s")
        }
        var source = JSONWriter.bytes(entry)
        source += serverArguments.joined(separator: "\u{0}").utf8
        return Tenant.Definition(
            name: name, tokenSHA256: digest, configuration: configuration, maximumInFlight: maximumInFlight,
            rate: rate, source: source)
    }

    /// `serve` read from `arguments`.
    private func command(_ arguments: [String]) throws(UsageError) -> ServeCommand {
        // `--help` is no option of a tenant, and the server's line was read once already.
        guard let command = try ServeCommand.parse(arguments) else { throw UsageError("--tenants: help asked for") }
        return command
    }

    /// The command-line words `value` stands for: `--flag` for a flag that is `true`, none for one that is `false`;
    /// `--option value` for each value of an option (none for an empty list).
    private static func words(
        _ value: PushPayload.JSON, _ declaration: ArgumentDeclaration, _ fail: (String) -> UsageError
    ) throws(UsageError) -> [String] {
        let flag = "--" + declaration.name
        guard declaration.placeholder != nil else {
            guard case .bool(let on) = value else { throw fail("expected true or false") }
            return on ? [flag] : []
        }
        func word(_ value: PushPayload.JSON) throws(UsageError) -> String {
            switch value {
            case .string(let string): return string.value
            case .number(let text): return text
            default: throw fail("expected a string or a number, got \(value.kindDescription)")
            }
        }
        guard case .array(let elements) = value else { return [flag, try word(value)] }
        guard declaration.repeatable else { throw fail("takes one value, not a list") }
        var words: [String] = []
        for element in elements { words += [flag, try word(element)] }
        return words
    }

    /// `arguments` without any of `flags` (`--flag value`, `--flag=value`, `--flag`), by `serve`'s `declarations`.
    static func removing(
        _ flags: Set<String>, from arguments: [String],
        declarations: [ArgumentDeclaration]
    ) -> [String] {
        var kept: [String] = []
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            guard argument.hasPrefix("--"), argument != "--" else {
                kept.append(argument)
                continue
            }
            let name = String(argument.dropFirst(2).prefix { $0 != "=" })
            guard flags.contains(name) else {
                kept.append(argument)
                continue
            }
            let takesValue = declarations.first { $0.name == name }?.placeholder != nil
            if takesValue, !argument.contains("=") { _ = remaining.popFirst() }
        }
        return kept
    }

    /// The options that publish a tenant under the server's publishing, in a prefix named after it: the directory's
    /// `<dir>/<name>` served as `<url>/<name>`, or the store's `s3://bucket/<prefix>/<name>`. None when the server
    /// does not publish.
    private static func publishingPrefix(of server: ServeCommand, name: String) -> [String] {
        let publish = server.engine.publish
        func below(_ base: String) -> String { (base.hasSuffix("/") ? base : base + "/") + name }
        if let directory = publish.publishDirectory, let url = publish.publishURL {
            return ["--publish-dir", below(directory), "--publish-url", below(url)]
        }
        if let location = publish.publishS3, let url = publish.publishURL {
            return ["--publish-s3", below(location), "--publish-url", url]
        }
        return []
    }

    /// The tenant's field a message names (`--allow-network: ...` is `allow_network`), else the first word of it.
    private static func field(of message: String, among flags: Set<String>) -> String {
        for flag in flags.sorted(by: { $0.count > $1.count }) where message.hasPrefix("--" + flag) {
            return flag.replacingAll("-", "_")
        }
        return "options"
    }

    /// `message` with the tenant's fields named as in the file (`--allow-network` as `allow_network`), its leading
    /// field left out (the caller names it).
    private static func renaming(_ message: String, _ flags: Set<String>) -> String {
        var message = message
        for flag in flags.sorted(by: { $0.count > $1.count }) {
            if message.hasPrefix("--" + flag + ": ") { message = String(message.dropFirst(flag.count + 4)) }
            message = message.replacingAll("--" + flag, flag.replacingAll("-", "_"))
        }
        return message
    }

    /// A tenant's name: 1-64 of `A-Z a-z 0-9 . _ -`, starting with a letter or digit (it names a directory or a key
    /// prefix when the tenant publishes under the server's, and a label in the metrics).
    static func isName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...64).contains(bytes.count), let first = bytes.first, isAlphanumeric(first) else { return false }
        return bytes.allSatisfy {
            isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
        }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }

    /// The 32 bytes of 64 lowercase hex digits, or nil.
    static func digest(_ hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        for pair in stride(from: 0, to: 64, by: 2) {
            guard let high = hexValue(digits[pair], lowercaseOnly: true),
                let low = hexValue(digits[pair + 1], lowercaseOnly: true)
            else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }
}
