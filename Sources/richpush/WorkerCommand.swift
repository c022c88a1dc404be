import RichPush
import RichPushHTTP
import RichPushWorker

#if canImport(Glibc)
    import Glibc
#endif

/// `richpush worker`: a consumer of a Redis Streams consumer group.
struct WorkerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        name: "worker",
        abstract: "Consume payload entries from a Redis stream (consumer group); write one result entry per entry.",
        discussion: """
            Each entry gets exactly one result entry, written together with its acknowledgement by a script on the
            server that first checks this consumer still owns the entry. SIGTERM or SIGINT drains: reading stops,
            the entries in flight are finished and written, the consumer leaves the group (XGROUP DELCONSUMER, when
            nothing is pending for it), and the process exits 0. See docs/service.md ("Workers on
            Redis Streams"). Past --drain-timeout the process exits whatever it is doing (Redis may be down): what is
            not written stays pending for another consumer, and a line on standard error says how many. EXIT STATUS:
            0 after a drain; 64 on a usage error; 70 when Redis refuses the credentials or the start (the group missing
            without --create-group; a Redis away, loading or busy is waited out) or the engine cannot start; 75
            (EX_TEMPFAIL) when the drain timeout left entries unwritten.
            """)

    @Option(
        "redis", .text("url"),
        help: "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] or unix:///path/to/socket, USER and PASSWORD "
            + "percent-encoded; a USER is a Redis 6 ACL user.")
    var redis: String

    @Option(
        "redis-password-file", .text("file"),
        help: "Take the Redis password from this regular file's first line, not from the URL (which any user sees "
            + "in ps); without either, from $REDISCLI_AUTH.")
    var passwordFile: String?

    @Option(
        "stream", .text("key"), help: "The input stream: entries with a 'payload' field, and optionally 'deadline'.")
    var stream: String

    @Option("group", .text("name"), help: "The consumer group.")
    var group: String

    @Option(
        "output-stream", .text("key"), help: "Where results go: entries with 'source' (the input id) and 'result'.")
    var outputStream: String

    @Option("metrics-listen", .text("address:port"), help: "Serve /healthz, /readyz and /metrics here.")
    var metricsAddress: String?

    @Option(
        "consumer", .text("name"), help: "This consumer's name; unique among live workers.",
        default: "<hostname>-<pid>-<random>")
    var consumer: String?

    @Option("dead-letter-stream", .text("key"), help: "Where entries delivered too often go.", default: "<stream>:dead")
    var deadLetterStream: String?

    @Option(
        "max-deliveries", .whole("deliveries", in: WorkerCommand.deliveriesRange),
        help: "Dead-letter an entry delivered more often than this.")
    var maximumDeliveries: Int = WorkerCommand.defaults.maximumDeliveries

    @Option(
        "claim-idle", .seconds(in: WorkerCommand.claimRange),
        help: "Claim entries pending this long for any consumer; must exceed --deadline.")
    var claimIdle: Duration = WorkerCommand.defaults.claimIdle

    @Flag("create-group", help: "Create the group (and the stream) if missing, from the stream's start.")
    var createGroup: Bool

    @Option(
        "remove-idle-consumers", .seconds(in: WorkerCommand.consumerIdleRange),
        help: "Remove the group's other consumers idle this long with no pending entry; 0 never.")
    var removeIdleConsumers: Duration = WorkerCommand.defaults.removeIdleConsumers ?? .zero

    @OptionGroup var drain: DrainOptions

    @OptionGroup var engine: EngineOptions

    /// The worker's settings as the library makes them: the defaults its options show. The address and the
    /// streams are placeholders; every command line names its own.
    static let defaults = StreamWorker.Settings(
        redis: try! RedisAddress(parsing: "redis://localhost"), stream: "", group: "", output: "", consumer: "",
        deadLetter: "")
    /// `--max-deliveries`: up to a thousand.
    static let deliveriesRange = 1...1000
    /// `--claim-idle`: from a second to a day.
    static let claimRange: ClosedRange<Duration> = .seconds(1) ... .seconds(86_400)
    /// `--remove-idle-consumers`: up to 30 days; 0 turns it off.
    static let consumerIdleRange: ClosedRange<Duration> = .zero ... .seconds(2_592_000)

    struct Plan: Sendable {
        let configuration: Enricher.Configuration
        let settings: StreamWorker.Settings
        let metricsAddress: String?
    }

    func plan() throws(UsageError) -> Plan {
        let redis = try redisAddress(redis, passwordFile: passwordFile)
        let configuration = try engine.configuration()
        var settings = StreamWorker.Settings(
            redis: redis, stream: stream, group: group, output: outputStream,
            consumer: consumer ?? Self.defaultConsumer(), deadLetter: deadLetterStream ?? stream + ":dead")
        settings.concurrency = engine.concurrency
        settings.createGroup = createGroup
        settings.maximumDeliveries = maximumDeliveries
        settings.claimIdle = claimIdle
        guard settings.claimIdle > configuration.timeout else {
            throw UsageError(
                "\($claimIdle.flag) must exceed \(engine.fetch.deadlineOption.flag): an entry still being processed "
                    + "would be claimed by another consumer")
        }
        settings.drainTimeout = drain.timeout
        settings.removeIdleConsumers = removeIdleConsumers == .zero ? nil : removeIdleConsumers
        if let address = metricsAddress, SocketAddress(address) == nil {
            throw UsageError("\($metricsAddress.flag): '\(address)' is not ADDRESS:PORT (an IPv6 address in brackets)")
        }
        return Plan(configuration: configuration, settings: settings, metricsAddress: metricsAddress)
    }

    static func run(_ plan: Plan) async -> Int32 {
        let (configuration, settings, metricsAddress) = (plan.configuration, plan.settings, plan.metricsAddress)
        // SIGTERM and SIGINT are taken over before the metrics listener is announced, as `serve` does; SIGHUP too
        // (a service manager's reload would end the process at once, with no drain): said, and nothing else.
        let runner = ServiceRunner(drainTimeout: settings.drainTimeout)
        let hangups = TerminationSignals(signals: [SIGHUP], everyTime: true) {
            Output.error("richpush worker: SIGHUP: nothing to read again; going on")
        }
        defer { withExtendedLifetime(hangups) {} }
        return await withEnricher(configuration) { enricher in
            let worker = StreamWorker(settings: settings, enricher: enricher, log: { Output.error($0) })
            // The health listener first: it answers (/readyz 503) until the worker's drain is done.
            var services: [any LifecycleService] = []
            if let address = metricsAddress {
                do {
                    let health = try HTTPServer(
                        listening: address, handler: WorkerHealth(worker: worker, enricher: enricher))
                    services.append(health)
                    Output.listening(address, port: health.port)
                } catch {
                    Output.error("richpush worker: \(error)")
                    return 70
                }
            }
            do {
                // At the drain timeout, the entries still in process stay pending: their work is cancelled, not
                // awaited.
                try await runner.run(services + [worker], enricher: enricher)
            } catch let error as RedisError {
                let hint =
                    error.kind == .authentication
                    ? " (the password comes from the --redis URL, --redis-password-file or REDISCLI_AUTH)" : ""
                Output.error("richpush worker: \(error.description)\(hint)")
                return 70
            } catch {
                Output.error("richpush worker: \(error)")
                return 70
            }
            guard case .timedOut(let unwritten, let computed, let failure)? = worker.ending else { return 0 }
            Output.error(drainReport(unwritten: unwritten, computed: computed, failure: failure, settings: settings))
            return 75
        }
    }

    /// The address in `url`, with its password from the URL, else from `passwordFile`'s first line, else from
    /// `REDISCLI_AUTH` (as `redis-cli` takes it). A password both in the URL and in a file is a mistake, not a
    /// precedence to guess. No message repeats a password.
    func redisAddress(_ url: String, passwordFile: String?) throws(UsageError) -> RedisAddress {
        var address: RedisAddress
        do {
            address = try RedisAddress(parsing: url)
        } catch {
            throw UsageError("\($redis.flag): \(error.description)")
        }
        if let passwordFile {
            guard address.password == nil else {
                throw UsageError(
                    "\($passwordFile.flag): the \($redis.flag) URL holds a password too; give it in one place")
            }
            address.password = try SecretFile.firstLine(of: passwordFile, option: $passwordFile.flag) {
                Output.error($0)
            }
        } else if address.password == nil, let variable = getenv("REDISCLI_AUTH"), variable.pointee != 0 {
            address.password = Array(String(cString: variable).utf8)
        }
        if address.user != nil, address.password == nil {
            throw UsageError(
                "\($redis.flag): the URL names a user but no password is given (in the URL, \($passwordFile.flag) or "
                    + "REDISCLI_AUTH)")
        }
        return address
    }

    /// The line that says what a drain cut short by `--drain-timeout` left unwritten, and where it is.
    static func drainReport(unwritten: Int, computed: Int, failure: String?, settings: StreamWorker.Settings) -> String
    {
        let entries = unwritten == 1 ? "1 entry" : "\(unwritten) entries"
        let cause = failure.map { "; writes were failing: \($0)" } ?? ""
        // Every entry taken was written, but a command was still waiting on Redis: a read Redis may yet answer
        // with entries, which nothing here will process, or the removal of the consumer.
        guard unwritten > 0 else {
            return "richpush worker: the drain timeout (\(settings.drainTimeout)) passed with every entry taken "
                + "written, but a command still waiting on Redis (a read, or the consumer's removal from the "
                + "group)\(cause). Entries Redis hands such a read stay pending for consumer '\(settings.consumer)'; "
                + "another consumer claims them after --claim-idle (\(settings.claimIdle))."
        }
        return "richpush worker: the drain timeout (\(settings.drainTimeout)) passed with \(entries) not written "
            + "(\(computed) with a result ready, \(unwritten - computed) still in process)\(cause). "
            + "They stay pending for consumer '\(settings.consumer)'; another consumer claims them after --claim-idle "
            + "(\(settings.claimIdle))."
    }

    /// `<hostname>-<pid>-<random>`: eight random hex digits (a random UUID's first) after the host and process.
    ///
    /// Why the random part: replicas in containers often share a host name (host networking) and a process id (each
    /// its own PID namespace: 1), so `<hostname>-<pid>` was the same for several live workers; sharing a name, each
    /// worker's looks for entries it never received take the others' entries in flight (done twice, a delivery
    /// counted each time, until dead-lettered). A name given with `--consumer` must be unique among live workers.
    static func defaultConsumer() -> String {
        var name = [CChar](repeating: 0, count: 256)
        let host =
            gethostname(&name, name.count) == 0
            ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "richpush"
        return "\(host)-\(getpid())-\(RandomName.uuid().prefix(8))"
    }
}
