#if canImport(Glibc)
    import Glibc
#endif
import RichPush
import RichPushHTTP
import RichPushServer

/// `richpush serve`: the engine behind HTTP.
enum ServeCommand {
    static let spec = CommandSpec(
        name: "serve",
        abstract: "Serve the engine over HTTP: POST /v1/enrich, /v1/explain; GET /healthz, /readyz, /metrics.",
        usage: "richpush serve [--listen <address:port> ...] [<options>]",
        arguments: [],
        options: [
            OptionSpec(
                name: "listen", value: "address:port",
                help: "Listen here (an IPv6 address in brackets; port 0 picks a free one). (default: 127.0.0.1:8080)",
                repeatable: true),
            OptionSpec(
                name: "max-body-bytes", value: "n",
                help: "The largest JSON request body, \(ParsedArguments.describe(bodyRange)); larger is 413. (default: 1048576)"),
            OptionSpec(
                name: "max-batch-bytes", value: "n",
                help: "The largest NDJSON request body, \(ParsedArguments.describe(bodyRange)); larger is 413. (default: 67108864)"),
            OptionSpec(
                name: "max-in-flight", value: "n",
                help: "Requests admitted at once, from their headers (an upload counts) to the end of their work (an NDJSON request counts once), \(ParsedArguments.describe(inFlightRange)); beyond, 503 with Retry-After before the body is read. (default: 256)"),
            OptionSpec(
                name: "max-connections", value: "n",
                help: "Connections open at once, per listener, \(ParsedArguments.describe(connectionRange)). (default: 1024)"),
            OptionSpec(
                name: "max-connections-per-address", value: "n",
                help: "Connections open at once from one client address, per listener, \(ParsedArguments.describe(perAddressRange)); 0 for no limit; beyond, 503 and closed at once. (default: 256)"),
            OptionSpec(
                name: "idle-timeout", value: "seconds",
                help: "Close a connection idle this long, \(ParsedArguments.describe(idleRange)). (default: 30)"),
            OptionSpec(
                name: "header-timeout", value: "seconds",
                help: "A request's line and headers must arrive within this (after a response: within --idle-timeout plus this), \(ParsedArguments.describe(idleRange)); else the connection is closed. (default: 10)"),
            OptionSpec(
                name: "min-body-rate", value: "bytes",
                help: "The slowest a request body may arrive, in bytes a second over each --header-timeout, \(ParsedArguments.describe(bodyRateRange)); 0 for no minimum; slower, the connection is closed. (default: 16384)"),
            OptionSpec(
                name: "max-buffered-bytes", value: "n",
                help: "Request-body bytes held in memory at once, per listener, \(ParsedArguments.describe(bodyRange)), at least the body limits; a body that does not fit: 503 with Retry-After. (default: 268435456)"),
            OptionSpec(
                name: "drain-timeout", value: "seconds",
                help: "On SIGTERM/SIGINT, how long requests in flight may take before their work is cancelled, \(ParsedArguments.describe(drainRange)). (default: 30)"),
            OptionSpec(
                name: "token-file", value: "file",
                help: "Require 'Authorization: Bearer <token>' on /v1/ routes, the token being this regular file's first line (at least \(minimumTokenBytes) characters). (default: none)"),
        ] + SharedOptions.specs,
        discussion: """
            Routes, status codes and metrics are described in the README ("Running the service"). One JSON line per
            request goes to standard error; a line {"listening": "<address:port>"} per listener when it is ready.
            SIGTERM or SIGINT drains: /readyz turns 503, new work is refused, requests in flight get their
            responses, then the process exits 0. Past --drain-timeout the work left is cancelled; what is still in
            progress 2 s later (a body trickling in, a response not read) is cut off, a line
            {"drain": "cut-off", ...} each, and a line {"drain": "done", "cut_off": N} ends every drain.
            EXIT STATUS: 0 after a drain; 64 on a usage error; 70 when a listener or the engine cannot start.
            """)

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
    /// `--drain-timeout`: up to an hour; 0 cancels work in flight at once.
    static let drainRange = 0.0...3600.0

    static func run(_ arguments: [String]) async throws(UsageError) -> Int32 {
        guard let parsed = try spec.parseOrShowHelp(arguments) else { return 0 }
        if !parsed.positionals.isEmpty { throw UsageError("serve: unexpected argument '\(parsed.positionals[0])'") }
        let configuration = try SharedOptions.configuration(parsed)
        var settings = EnrichmentService.Settings()
        settings.concurrency = try SharedOptions.concurrency(parsed)
        if let bytes = try parsed.wholeNumber("max-body-bytes", of: "bytes", in: bodyRange) { settings.maximumBodyBytes = bytes }
        if let bytes = try parsed.wholeNumber("max-batch-bytes", of: "bytes", in: bodyRange) { settings.maximumBatchBytes = bytes }
        if let count = try parsed.wholeNumber("max-in-flight", of: "payloads", in: inFlightRange) { settings.maximumInFlight = count }
        var limits = HTTPServer.Limits()
        if let count = try parsed.wholeNumber("max-connections", of: "connections", in: connectionRange) { limits.connections = count }
        if let count = try parsed.wholeNumber("max-connections-per-address", of: "connections", in: perAddressRange) {
            limits.connectionsPerAddress = count
        }
        if let seconds = try parsed.wholeNumber("idle-timeout", of: "seconds", in: idleRange) { limits.idleTimeoutSeconds = seconds }
        if let seconds = try parsed.wholeNumber("header-timeout", of: "seconds", in: idleRange) { limits.headerTimeoutSeconds = seconds }
        if let rate = try parsed.wholeNumber("min-body-rate", of: "bytes a second", in: bodyRateRange) { limits.minimumBodyRate = rate }
        if let bytes = try parsed.wholeNumber("max-buffered-bytes", of: "bytes", in: bodyRange) { limits.bufferedBodyBytes = bytes }
        // A bound below a body limit would refuse every body of that size, for ever.
        guard limits.bufferedBodyBytes >= max(settings.maximumBodyBytes, settings.maximumBatchBytes) else {
            throw UsageError("--max-buffered-bytes: \(limits.bufferedBodyBytes) is less than the largest body allowed (--max-body-bytes, --max-batch-bytes: \(max(settings.maximumBodyBytes, settings.maximumBatchBytes)))")
        }
        let drainTimeout = try parsed.seconds("drain-timeout", in: drainRange) ?? .seconds(30)
        if let file = parsed.value("token-file") { settings.token = try token(file) }
        let addresses = parsed.all("listen").isEmpty ? ["127.0.0.1:8080"] : parsed.all("listen")
        for address in addresses {
            guard let parsed = SocketAddress(address) else {
                throw UsageError("--listen: '\(address)' is not ADDRESS:PORT (an IPv6 address in brackets, PORT within 0-65535)")
            }
            if !parsed.isLoopback, settings.token == nil {
                Output.error(
                    "richpush: warning: --listen \(address) is not a loopback address and no --token-file is given: "
                        + "whoever reaches it may enrich payloads and read attachments")
            }
        }
        // The access log goes out in batches from a thread of its own; flushed before the exit.
        let accessLog = BufferedLog(descriptor: 2)
        defer { accessLog.flush() }
        // SIGTERM and SIGINT are taken over before any listener is announced: a signal that came between the
        // announcement and the handler would end the process at once, without a drain.
        let (requests, continuation) = AsyncStream<Void>.makeStream()
        let signals = TerminationSignals { continuation.finish() }
        defer { withExtendedLifetime(signals) {} }
        return try await withEnricher(configuration) { enricher throws(UsageError) in
            let host: ServiceHost
            do {
                host = try ServiceHost(
                    enricher: enricher, settings: settings, limits: limits, addresses: addresses,
                    log: accessLog.append)
            } catch {
                Output.error("richpush serve: \(error)")
                return 70
            }
            for (address, port) in zip(addresses, host.ports) {
                Output.listening(address, port: port)
            }
            for await _ in requests {}
            // The drain says what it cut off in the log, and the exit is 0 either way: the stop asked for was done,
            // within its bound; a client that would not finish is not the service failing.
            await host.drain(timeout: drainTimeout)
            return 0
        }
    }

    /// The shortest token accepted, in bytes: 16, at least 64 bits even when they are hex digits (`openssl rand -hex
    /// 32` makes 64 of them, 256 bits). The token is all that guards `/v1/` on a listener that may be reached from elsewhere, and a
    /// refusal costs a guesser only a request; a short one is refused at start, where it is fixed once, rather than
    /// warned about in a log nobody reads.
    static let minimumTokenBytes = 16

    /// The token in `file`: its first line (a regular file, opened without blocking; a warning when group or others
    /// may read it), at least `minimumTokenBytes` visible ASCII characters. No message shows any of it.
    static func token(_ file: String) throws(UsageError) -> [UInt8] {
        let token = try SecretFile.firstLine(of: file, option: "token-file") { Output.error($0) }
        guard token.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw UsageError("--token-file: the first line of '\(file)' must be a token of visible ASCII characters")
        }
        guard token.count >= minimumTokenBytes else {
            throw UsageError(
                "--token-file: the token in '\(file)' is \(token.count) bytes; at least \(minimumTokenBytes) are required "
                    + "(make one with: openssl rand -hex 32)")
        }
        return token
    }
}
