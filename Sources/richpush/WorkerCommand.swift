#if canImport(Glibc)
    import Glibc
#endif
import RichPush
import RichPushHTTP
import RichPushWorker

/// `richpush worker`: a consumer of a Redis Streams consumer group.
enum WorkerCommand {
    static let spec = CommandSpec(
        name: "worker",
        abstract: "Consume payload entries from a Redis stream (consumer group); write one result entry per entry.",
        usage: "richpush worker --redis <url> --stream <in> --group <group> --output-stream <out> [<options>]",
        arguments: [],
        options: [
            OptionSpec(
                name: "redis", value: "url",
                help: "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] or unix:///path/to/socket, USER and PASSWORD percent-encoded; a USER is a Redis 6 ACL user. (required)"),
            OptionSpec(
                name: "redis-password-file", value: "file",
                help: "Take the Redis password from this regular file's first line, not from the URL (which any user sees in ps); without either, from $REDISCLI_AUTH. (default: none)"),
            OptionSpec(name: "stream", value: "key", help: "The input stream: entries with a 'payload' field, and optionally 'deadline'. (required)"),
            OptionSpec(name: "group", value: "name", help: "The consumer group. (required)"),
            OptionSpec(name: "output-stream", value: "key", help: "Where results go: entries with 'source' (the input id) and 'result'. (required)"),
            OptionSpec(name: "consumer", value: "name", help: "This consumer's name. (default: <hostname>-<pid>)"),
            OptionSpec(name: "dead-letter-stream", value: "key", help: "Where entries delivered too often go. (default: <stream>:dead)"),
            OptionSpec(
                name: "max-deliveries", value: "n",
                help: "Dead-letter an entry delivered more often than this, \(ParsedArguments.describe(deliveriesRange)). (default: 3)"),
            OptionSpec(
                name: "claim-idle", value: "seconds",
                help: "Claim entries pending this long for any consumer; must exceed --deadline, \(ParsedArguments.describe(claimRange)). (default: 60)"),
            OptionSpec(name: "create-group", value: nil, help: "Create the group (and the stream) if missing, from the stream's start. (default: off)"),
            OptionSpec(name: "metrics-listen", value: "address:port", help: "Serve /healthz, /readyz and /metrics here. (default: none)"),
            OptionSpec(
                name: "remove-idle-consumers", value: "seconds",
                help: "Remove the group's other consumers idle this long with no pending entry, \(ParsedArguments.describe(consumerIdleRange)); 0 never. (default: 3600)"),
            OptionSpec(
                name: "drain-timeout", value: "seconds",
                help: "On SIGTERM/SIGINT, how long entries in flight may take to be written, \(ParsedArguments.describe(drainRange)). (default: 30)"),
        ] + SharedOptions.specs,
        discussion: """
            Each entry gets exactly one result entry, written together with its acknowledgement by a script on the
            server that first checks this consumer still owns the entry. SIGTERM or SIGINT drains: reading stops,
            the entries in flight are finished and written, the consumer leaves the group (XGROUP DELCONSUMER, when
            nothing is pending for it), and the process exits 0. See the README ("Workers on
            Redis Streams"). Past --drain-timeout the process exits whatever it is doing (Redis may be down): what is
            not written stays pending for another consumer, and a line on standard error says how many. EXIT STATUS:
            0 after a drain; 64 on a usage error; 70 when the group is missing (without --create-group) or the engine
            cannot start; 75 (EX_TEMPFAIL) when the drain timeout left entries unwritten.
            """)

    static let deliveriesRange = 1...1000
    /// `--claim-idle`: from a second to a day.
    static let claimRange = 1.0...86_400.0
    static let drainRange = 0.0...3600.0
    /// `--remove-idle-consumers`: up to 30 days; 0 turns it off.
    static let consumerIdleRange = 0.0...2_592_000.0

    static func run(_ arguments: [String]) async throws(UsageError) -> Int32 {
        guard let parsed = try spec.parseOrShowHelp(arguments) else { return 0 }
        if !parsed.positionals.isEmpty { throw UsageError("worker: unexpected argument '\(parsed.positionals[0])'") }
        func required(_ name: String) throws(UsageError) -> String {
            guard let value = parsed.value(name), !value.isEmpty else { throw UsageError("worker: --\(name) is required") }
            return value
        }
        let redis = try redisAddress(try required("redis"), passwordFile: parsed.value("redis-password-file"))
        let stream = try required("stream")
        let configuration = try SharedOptions.configuration(parsed)
        var settings = StreamWorker.Settings(
            redis: redis, stream: stream, group: try required("group"), output: try required("output-stream"),
            consumer: parsed.value("consumer") ?? defaultConsumer(), deadLetter: parsed.value("dead-letter-stream") ?? stream + ":dead")
        settings.concurrency = try SharedOptions.concurrency(parsed)
        settings.createGroup = parsed.has("create-group")
        if let count = try parsed.wholeNumber("max-deliveries", of: "deliveries", in: deliveriesRange) { settings.maximumDeliveries = count }
        if let idle = try parsed.seconds("claim-idle", in: claimRange) { settings.claimIdle = idle }
        guard settings.claimIdle > configuration.deadline else {
            throw UsageError("--claim-idle must exceed --deadline: an entry still being processed would be claimed by another consumer")
        }
        if let drain = try parsed.seconds("drain-timeout", in: drainRange) { settings.drainTimeout = drain }
        if let age = try parsed.seconds("remove-idle-consumers", in: consumerIdleRange) {
            settings.removeIdleConsumers = age == .zero ? nil : age
        }
        let metricsAddress = parsed.value("metrics-listen")
        if let address = metricsAddress, SocketAddress(address) == nil {
            throw UsageError("--metrics-listen: '\(address)' is not ADDRESS:PORT (an IPv6 address in brackets)")
        }
        return try await withEnricher(configuration) { enricher throws(UsageError) in
            let worker = StreamWorker(settings: settings, enricher: enricher, log: { Output.error($0) })
            var health: HTTPServer? = nil
            if let address = metricsAddress {
                do {
                    health = try HTTPServer(listening: address, handler: WorkerHealth(worker: worker, enricher: enricher))
                } catch {
                    Output.error("richpush worker: \(error)")
                    return 70
                }
                Output.listening(address, port: health!.port)
            }
            let signals = TerminationSignals { worker.stop() }
            defer { withExtendedLifetime((signals, health)) {} }
            let ending: StreamWorker.Ending
            do throws(RedisError) {
                ending = try await worker.run()
            } catch {
                let hint = error.kind == .authentication ? " (the password comes from the --redis URL, --redis-password-file or REDISCLI_AUTH)" : ""
                Output.error("richpush worker: \(error.description)\(hint)")
                return 70
            }
            // The entries still in process at the drain's end stay pending: their work is cancelled, not awaited.
            await enricher.shutdown(drainDeadline: .now)
            guard case .timedOut(let unwritten, let computed, let failure) = ending else { return 0 }
            Output.error(drainReport(unwritten: unwritten, computed: computed, failure: failure, settings: settings))
            return 75
        }
    }

    /// The address in `url`, with its password from the URL, else from `passwordFile`'s first line, else from
    /// `REDISCLI_AUTH` (as `redis-cli` takes it). A password both in the URL and in a file is a mistake, not a
    /// precedence to guess. No message repeats a password.
    static func redisAddress(_ url: String, passwordFile: String?) throws(UsageError) -> RedisAddress {
        var address: RedisAddress
        do {
            address = try RedisAddress(parsing: url)
        } catch {
            throw UsageError("--redis: \(error.description)")
        }
        if let passwordFile {
            guard address.password == nil else {
                throw UsageError("--redis-password-file: the --redis URL holds a password too; give it in one place")
            }
            address.password = try SecretFile.firstLine(of: passwordFile, option: "redis-password-file") { Output.error($0) }
        } else if address.password == nil, let variable = getenv("REDISCLI_AUTH"), variable.pointee != 0 {
            address.password = Array(String(cString: variable).utf8)
        }
        if address.user != nil, address.password == nil {
            throw UsageError("--redis: the URL names a user but no password is given (in the URL, --redis-password-file or REDISCLI_AUTH)")
        }
        return address
    }

    /// The line that says what a drain cut short by `--drain-timeout` left unwritten, and where it is.
    static func drainReport(unwritten: Int, computed: Int, failure: String?, settings: StreamWorker.Settings) -> String {
        let entries = unwritten == 1 ? "1 entry" : "\(unwritten) entries"
        let cause = failure.map { "; writes were failing: \($0)" } ?? ""
        return "richpush worker: the drain timeout (\(settings.drainTimeout)) passed with \(entries) not written "
            + "(\(computed) with a result ready, \(unwritten - computed) still in process)\(cause). "
            + "They stay pending for consumer '\(settings.consumer)'; another consumer claims them after --claim-idle "
            + "(\(settings.claimIdle))."
    }

    /// `<hostname>-<pid>`.
    static func defaultConsumer() -> String {
        var name = [CChar](repeating: 0, count: 256)
        let host = gethostname(&name, name.count) == 0 ? String(cString: name) : "richpush"
        return "\(host)-\(getpid())"
    }
}
