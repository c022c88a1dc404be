import RichPush
import RichPushHTTP
import RichPushServer

#if canImport(Glibc)
    import Glibc
#endif

/// The words a command was parsed from, kept beside its options (a reference: the parser's copies share it).
final class ParsedWords {
    var arguments: [String] = []
}

/// `richpush serve`: the engine behind HTTP.
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        name: "serve",
        abstract: """
            Serve the engine over HTTP: POST /v1/enrich, /v1/explain, /v1/preflight; GET /v1/attachments/..., \
            /healthz, /readyz, /metrics.
            """,
        discussion: """
            GET /v1/attachments/<directory>/<file> serves an attachment this process stored (the last two components
            of a result's "path"), while it is the very file stored. Routes, status codes and metrics are described in
            docs/service.md. One JSON line per
            request goes to standard error; a line {"listening": "<address:port>"} per listener when it is ready.
            SIGTERM or SIGINT drains: /readyz turns 503, new work is refused, requests in flight get their
            responses, then the process exits 0. Past --drain-timeout the work left is cancelled; what is still in
            progress 2 s later (a body trickling in, a response not read) is cut off, a line
            {"drain": "cut-off", ...} each, and a line {"drain": "done", "cut_off": N} ends every drain.
            EXIT STATUS: 0 after a drain; 64 on a usage error; 70 when a listener or the engine cannot start.
            """)

    @Option(
        "listen", .text("address:port"), help: "Listen here (an IPv6 address in brackets; port 0 picks a free one).")
    var listen: [String] = ServiceHost.defaultAddresses

    @Option(
        "max-body-bytes", .whole("bytes", in: ServeCommand.bodyRange),
        help: "The largest JSON request body; larger is 413.")
    var maximumBodyBytes: Int = EnrichmentService.Settings().maximumBodyBytes

    @Option(
        "max-batch-bytes", .whole("bytes", in: ServeCommand.bodyRange),
        help: "The largest NDJSON request body; larger is 413.")
    var maximumBatchBytes: Int = EnrichmentService.Settings().maximumBatchBytes

    @Option(
        "max-in-flight", .whole("payloads", in: ServeCommand.inFlightRange),
        help: "Requests admitted at once, from their headers (an upload counts) to the end of their work (an NDJSON "
            + "request counts once); beyond, 503 with Retry-After before the body is read.")
    var maximumInFlight: Int = EnrichmentService.Settings().maximumInFlight

    @Option(
        "max-connections", .whole("connections", in: ServeCommand.connectionRange),
        help: "Connections open at once, per listener.")
    var maximumConnections: Int = HTTPServer.Limits().connections

    @Option(
        "max-connections-per-address", .whole("connections", in: ServeCommand.perAddressRange),
        help: "Connections open at once from one client address, per listener; 0 for no limit; beyond, 503 and "
            + "closed at once.")
    var maximumConnectionsPerAddress: Int = HTTPServer.Limits().connectionsPerAddress

    @Option(
        "idle-timeout", .whole("seconds", in: ServeCommand.idleRange, placeholder: "seconds"),
        help: "Close a connection idle this long.")
    var idleTimeout: Int = HTTPServer.Limits().idleTimeoutSeconds

    @Option(
        "header-timeout", .whole("seconds", in: ServeCommand.idleRange, placeholder: "seconds"),
        help: "A request's line and headers must arrive within this (after a response: within --idle-timeout plus "
            + "this); else the connection is closed.")
    var headerTimeout: Int = HTTPServer.Limits().headerTimeoutSeconds

    @Option(
        "min-body-rate", .whole("bytes a second", in: ServeCommand.bodyRateRange, placeholder: "bytes"),
        help: "The slowest a request body may arrive, in bytes a second over each --header-timeout; 0 for no "
            + "minimum; slower, the connection is closed.")
    var minimumBodyRate: Int = HTTPServer.Limits().minimumBodyRate

    @Option(
        "max-buffered-bytes", .whole("bytes", in: ServeCommand.bodyRange),
        help: "Request-body bytes held in memory at once, per listener, at least the body limits; a body that does "
            + "not fit: 503 with Retry-After.")
    var maximumBufferedBytes: Int = HTTPServer.Limits().bufferedBodyBytes

    @OptionGroup var drain: DrainOptions

    @Option(
        "token-file", .text("file"),
        help: "Require 'Authorization: Bearer <token>' on /v1/ routes, the token being this regular file's first "
            + "line (at least \(ServeCommand.minimumTokenBytes) characters).")
    var tokenFile: String?

    @Option(
        "tenants", .text("file"),
        help: "Serve several apps, each by its own bearer token and settings: the tenants in this JSON file (see "
            + "docs/service.md, Tenants); SIGHUP reads it again. Not with --token-file.")
    var tenantsFile: String?

    /// The words this command was parsed from: `--tenants` reads each tenant's options from them, with its
    /// overrides.
    private let words = ParsedWords()

    func parsed(from arguments: [String]) { words.arguments = arguments }

    @OptionGroup var engine: EngineOptions

    /// Body limits: from one byte to 1 GiB.
    static let bodyRange = 1...(1 << 30)
    /// `--max-in-flight`: up to 100,000 payloads, far beyond what one engine's 64 connections serve.
    static let inFlightRange = 1...100_000
    /// `--max-connections`: up to 60,000, within a process's usual descriptor limits once raised.
    static let connectionRange = 1...60_000
    /// `--max-connections-per-address`: up to `--max-connections`'s bound; 0 turns the limit off.
    static let perAddressRange = 0...60_000
    /// `--idle-timeout`, `--header-timeout`: a second to an hour.
    static let idleRange = 1...3600
    /// `--min-body-rate`: up to 1 GiB a second; 0 turns the minimum off.
    static let bodyRateRange = 0...(1 << 30)

    struct Plan: Sendable {
        let configuration: Enricher.Configuration
        let settings: EnrichmentService.Settings
        let limits: HTTPServer.Limits
        let drainTimeout: Duration
        let addresses: [String]
        /// With `--tenants`: the file, and the tenants it defined at the start.
        let tenants: (file: TenantsFile, definitions: [Tenant.Definition])?
    }

    func plan() throws(UsageError) -> Plan {
        let configuration = try engine.configuration()
        var settings = EnrichmentService.Settings()
        settings.concurrency = engine.concurrency
        settings.maximumBodyBytes = maximumBodyBytes
        settings.maximumBatchBytes = maximumBatchBytes
        settings.maximumInFlight = maximumInFlight
        var limits = HTTPServer.Limits()
        limits.connections = maximumConnections
        limits.connectionsPerAddress = maximumConnectionsPerAddress
        limits.idleTimeoutSeconds = idleTimeout
        limits.headerTimeoutSeconds = headerTimeout
        limits.minimumBodyRate = minimumBodyRate
        limits.bufferedBodyBytes = maximumBufferedBytes
        // A bound below a body limit would refuse every body of that size, for ever.
        let largestBody = max(settings.maximumBodyBytes, settings.maximumBatchBytes)
        guard limits.bufferedBodyBytes >= largestBody else {
            throw UsageError(
                "\($maximumBufferedBytes.flag): \(limits.bufferedBodyBytes) is less than the largest body allowed "
                    + "(\($maximumBodyBytes.flag), \($maximumBatchBytes.flag): \(largestBody))")
        }
        if let file = tokenFile { settings.token = try token(file) }
        var tenants: (file: TenantsFile, definitions: [Tenant.Definition])?
        if let path = tenantsFile {
            guard tokenFile == nil else {
                throw UsageError(
                    "\($tenantsFile.flag) and \($tokenFile.flag): give one, not both (each tenant has its own token)")
            }
            settings.tenants = true
            let file = TenantsFile(path: path, serverArguments: words.arguments)
            tenants = (file, try file.definitions())
        }
        for address in listen {
            guard let parsed = SocketAddress(address) else {
                throw UsageError(
                    "\($listen.flag): '\(address)' is not ADDRESS:PORT (an IPv6 address in brackets, PORT within "
                        + "0-65535)")
            }
            if !parsed.isLoopback, settings.token == nil, !settings.tenants {
                Output.error(
                    "richpush: warning: \($listen.flag) \(address) is not a loopback address and no \($tokenFile.flag) "
                        + "is given: "
                        + "whoever reaches it may enrich payloads and read attachments")
            }
        }
        return Plan(
            configuration: configuration, settings: settings, limits: limits, drainTimeout: drain.timeout,
            addresses: listen, tenants: tenants)
    }

    static func run(_ plan: Plan) async -> Int32 {
        let (configuration, settings, limits, drainTimeout, addresses) = (
            plan.configuration, plan.settings, plan.limits, plan.drainTimeout, plan.addresses
        )
        // The open files limit raised to its hard one; still short of the connections allowed, said once.
        let needed = limits.connections * addresses.count + OpenFilesLimit.reserve
        if let files = OpenFilesLimit.raise(), files.soft < UInt64(needed) {
            Output.error(
                "richpush serve: warning: the open files limit is \(files.soft) (hard limit \(files.hard)), under the "
                    + "\(needed) descriptors that --max-connections \(limits.connections) on \(addresses.count) "
                    + "listener\(addresses.count == 1 ? "" : "s") may need with the server's own: connections past "
                    + "it fail before the connection limit answers 503; raise the hard limit (ulimit -Hn, "
                    + "systemd's LimitNOFILE=) or lower --max-connections")
        }
        // The access log goes out in batches from a thread of its own; flushed before the exit.
        let accessLog = BufferedLog(descriptor: 2)
        defer { accessLog.flush() }
        // SIGTERM and SIGINT are taken over before any listener is announced: a signal that came between the
        // announcement and the handler would end the process at once, without a drain.
        let runner = ServiceRunner(drainTimeout: drainTimeout)
        return await withEnricher(configuration) { enricher in
            let host: ServiceHost
            do {
                host = try ServiceHost(
                    enricher: enricher, settings: settings, limits: limits, addresses: addresses,
                    log: accessLog.append)
            } catch {
                Output.error("richpush serve: \(error)")
                return 70
            }
            if let tenants = plan.tenants {
                do {
                    try host.service.replaceTenants(tenants.definitions)
                } catch {
                    Output.error("richpush serve: --tenants: \(error)")
                    return 70
                }
            }
            // Taken over before the listeners are announced, as SIGTERM is, with or without a tenants file: a SIGHUP
            // (a service manager's reload, an operator's habit) would end the process at once, with no drain.
            let reloads = TerminationSignals(signals: [SIGHUP], everyTime: true) {
                accessLog.append(plan.tenants.map { Self.reload($0.file, host.service) } ?? Self.nothingToReload)
            }
            for (address, port) in zip(addresses, host.ports) {
                Output.listening(address, port: port)
            }
            // The drain says what it cut off in the log, and the exit is 0 either way: the stop asked for was done,
            // within its bound; a client that would not finish is not the service failing.
            try? await runner.run([host], enricher: enricher)
            withExtendedLifetime(reloads) {}
            // The tenants' engines: their media caches' links go (the shared loop stopped with the server's engine).
            // The drain is over: what a tenant still runs (a payload cut off, on a loop of its own) ends now, not at
            // its deadline.
            for tenant in host.service.tenants { await tenant.enricher.shutdown(drainDeadline: .now) }
            return 0
        }
    }

    /// The log line of a SIGHUP without `--tenants`: nothing is read again, and the server goes on.
    static let nothingToReload =
        JSONWriter.bytes(
            .object(JSONObject([("reload", .text("nothing")), ("detail", .text("no --tenants file to read again"))])))
        + [0x0A]

    /// Reads the tenants file again and puts its tenants in place (SIGHUP): the log line saying so,
    /// `{"reload":"done","tenants":N}`, or `{"reload":"refused","error":...}` when the file does not validate, and
    /// the tenants stay as they were.
    static func reload(_ file: TenantsFile, _ service: EnrichmentService) -> [UInt8] {
        let outcome: PushPayload.JSON
        do throws(UsageError) {
            let definitions = try file.definitions()
            do {
                try service.replaceTenants(definitions)
                return JSONWriter.bytes(
                    .object(JSONObject([("reload", .text("done")), ("tenants", .integer(definitions.count))])))
                    + [0x0A]
            } catch {
                outcome = .text("richpush serve: --tenants: \(error)")
            }
        } catch {
            outcome = .text(error.detail)
        }
        return JSONWriter.bytes(.object(JSONObject([("reload", .text("refused")), ("error", outcome)]))) + [0x0A]
    }

    /// The shortest token accepted, in bytes: 16, at least 64 bits even when they are hex digits (`openssl rand -hex
    /// 32` makes 64 of them, 256 bits). The token is all that guards `/v1/` on a listener that may be reached from
    /// elsewhere, and a refusal costs a guesser only a request; a short one is refused at start, where it is fixed
    /// once, rather than warned about in a log nobody reads.
    static let minimumTokenBytes = 16

    /// The token in `file`: its first line (a regular file, opened without blocking; a warning when group or others
    /// may read it), at least `minimumTokenBytes` visible ASCII characters. No message shows any of it.
    func token(_ file: String) throws(UsageError) -> [UInt8] {
        let token = try SecretFile.firstLine(of: file, option: $tokenFile.flag) { Output.error($0) }
        guard token.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw UsageError(
                "\($tokenFile.flag): the first line of '\(file)' must be a token of visible ASCII characters")
        }
        guard token.count >= Self.minimumTokenBytes else {
            throw UsageError(
                "\($tokenFile.flag): the token in '\(file)' is \(token.count) bytes; at least "
                    + "\(Self.minimumTokenBytes) are required "
                    + "(make one with: openssl rand -hex 32)")
        }
        return token
    }
}
