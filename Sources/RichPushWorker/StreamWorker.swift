import RichPush

/// `richpush worker`: one consumer of a Redis Streams consumer group. It reads payload entries as it has free
/// slots, enriches each, and for each writes one result entry and acknowledges the input in one atomic step on
/// the server (a Lua script that first checks this consumer still owns the entry). It claims entries other
/// consumers left idle, sends entries delivered too often to a dead-letter stream, survives Redis going away,
/// and drains on request.
///
/// Threads of its own talk to Redis (blocking hiredis calls never hold the cooperative pool): one for the start-up
/// (the group checked or made, waiting out Redis being away), then the reader (XREADGROUP, XAUTOCLAIM) and the
/// writer (the scripts); the enrichment runs as Swift tasks between them.
package final class StreamWorker: LifecycleService {
    /// Where and how the worker consumes; defaults documented in docs/service.md ("Workers on Redis Streams").
    package struct Settings: Sendable {
        package var redis: RedisAddress
        package var stream: String
        package var group: String
        package var output: String
        /// Default `<hostname>-<pid>-<random>`: unique per process, and readable in `XINFO CONSUMERS`. Must be unique
        /// among live workers: a look for entries never received takes every entry pending for this name.
        package var consumer: String
        /// Default `<stream>:dead`.
        package var deadLetter: String
        /// An entry delivered more often than this goes to the dead-letter stream. Default 3: an entry whose
        /// processing killed three workers will kill the next.
        package var maximumDeliveries = 3
        /// Entries pending this long for any consumer are claimed. Default 60 s: beyond the 25 s default deadline
        /// and the write after it, so a live worker's entry is never taken while it still works on it.
        package var claimIdle: Duration = .seconds(60)
        /// Create the group (and the stream) when missing, reading the stream from its start.
        package var createGroup = false
        /// Entries in process at once (read, not yet written). Default `Enricher.Configuration.defaultConcurrency`
        /// (32), as `stream` and `serve`.
        package var concurrency = Enricher.Configuration.defaultConcurrency
        /// How long a drain may wait for the entries in flight to be written. Default
        /// `ServiceRunner.defaultDrainTimeout` (30 s), as every mode.
        package var drainTimeout = ServiceRunner.defaultDrainTimeout
        /// Other consumers of the group with no pending entry, idle longer than this, are removed (nil: never).
        /// Default an hour: removing one loses nothing (Redis makes a consumer again at its next read), so the age
        /// only keeps the workers of the last hour in `XINFO CONSUMERS` for an operator looking back at an
        /// incident, while a fleet restarted at every deploy, or killed, does not pile up consumers.
        package var removeIdleConsumers: Duration? = .seconds(3600)

        package init(
            redis: RedisAddress, stream: String, group: String, output: String, consumer: String, deadLetter: String
        ) {
            self.redis = redis
            self.stream = stream
            self.group = group
            self.output = output
            self.consumer = consumer
            self.deadLetter = deadLetter
        }
    }

    /// The state machine, the start-up's outcome, and `run` waiting for either.
    private struct Core {
        var machine: WorkerStateMachine
        /// The start-up's outcome once it is over: whether the group was checked or made (false: reading stopped
        /// first), or why not; nil while it goes on.
        var started: Result<Bool, RedisError>? = nil
        /// Whether the reader and the writer run (the start-up succeeded).
        var working = false
        /// `run`, waiting until `runMayGoOn`.
        var waiting: CheckedContinuation<Void, Never>? = nil
        var ending: Ending? = nil

        /// What `run` waits for: during the start-up, its end or a shutdown (which need not wait for a connection
        /// attempt under way: nothing was read yet); then the reader and the writer done, or the drain over.
        var runMayGoOn: Bool { working ? machine.isFinished : started != nil || machine.readingStopped }
    }

    /// How `run()` ended.
    package enum Ending: Sendable, Equatable {
        /// Every entry taken was written (or dead-lettered, or dropped as another consumer's).
        case drained
        /// The drain timeout passed first: `unwritten` entries, `computed` of them with their result ready, were
        /// not written (as far as the worker knows); they stay pending for this consumer, and another claims them
        /// after `claimIdle`. `failure` is the last write's error when writes were failing.
        case timedOut(unwritten: Int, computed: Int, failure: String?)
    }

    private let settings: Settings
    private let group: ConsumerGroup
    private let enricher: Enricher
    package let metrics: WorkerMetrics
    /// The decisions, under one lock whose condition the reader and the writer wait on.
    private let core: LockedValue<Core>
    private let log: @Sendable (String) -> Void

    package init(settings: Settings, enricher: Enricher, log: @escaping @Sendable (String) -> Void) {
        self.settings = settings
        // The largest payload kept (the engine's `limits.payload.maximumBytes`): a longer one is measured as it is
        // read, never held, and gets its `payload-too-large` result.
        group = ConsumerGroup(
            settings: settings, payloadLimit: enricher.configuration.limits.payload.maximumBytes, log: log)
        self.enricher = enricher
        self.log = log
        metrics = WorkerMetrics()
        core = LockedValue(
            Core(machine: WorkerStateMachine(settings: settings, connectionCheck: Self.connectionCheck, now: .now)))
    }

    /// Entries read and not yet written.
    package var inFlight: Int { core.withLock { $0.machine.inFlight } }

    /// The worker's readiness: the reader's connection answered within the last `connectionCheck` or so (even
    /// while every slot is taken and nothing is read), the last write did not fail, and it is not draining.
    package var isReady: Bool { core.withLock { $0.machine.isReady } }

    /// How often the reader checks its connection (PING) while every slot is taken and it reads nothing. 1 s: as
    /// often as an idle reader's `XREADGROUP ... BLOCK 1000` returns, so readiness follows Redis as closely
    /// whether the worker is idle or saturated, for the cost of one PING a second.
    static let connectionCheck: Duration = .seconds(1)

    /// Runs as a service of `ServiceRunner`: reads and processes entries until the runner asks for a graceful
    /// shutdown (`stop()`), then drains: reading stops, and it returns once every entry taken is written. Cancelled
    /// (the runner's drain timeout), it returns at once, whatever the writer is doing then (a write in progress is
    /// one script on the server: it happens whole or not at all), and writes nothing more. `ending` then says which.
    /// Stopped or cancelled during the start-up (Redis not answering yet), it returns at once, having read nothing
    /// (`drained`). Throws when the group cannot be found or made at the start, or Redis refuses the credentials (a
    /// mistake in the command line, not an outage: an outage is waited out).
    package func run() async throws(RedisError) {
        let started: Result<Bool, RedisError> = await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                // The start-up's Redis calls, and its waits between attempts while Redis is away, run on a thread of
                // their own as the reader's and the writer's do: a blocking call (up to the 5 s timeout) or a
                // backoff (up to 5 s) never holds a thread of the cooperative pool, and a shutdown need not wait
                // for them.
                startDedicatedThread { [self] in
                    let outcome = Result { () throws(RedisError) in try prepare() }
                    change { $0.started = outcome }
                }
                await untilRunMayGoOn()
                let outcome = core.withLock { core -> Result<Bool, RedisError> in
                    switch core.started {
                    case .failure(let error)?: return .failure(error)
                    case .success(true)?:
                        core.working = true
                        return .success(true)
                    case .success(false)?, nil: return .success(false)
                    }
                }
                guard case .success(true) = outcome else { return outcome }
                startDedicatedThread { [self] in readLoop() }
                startDedicatedThread { [self] in writeLoop() }
                await untilRunMayGoOn()
                return .success(true)
            } onCancel: {
                self.event { $0.drainDeadlinePassed() }
            }
        } onGracefulShutdown: {
            self.stop()
        }
        guard try started.get() else {
            log("richpush worker: stopped during the start-up; nothing was read")
            core.withLock { $0.ending = .drained }
            return
        }
        core.withLock { $0.ending = $0.machine.ending }
    }

    /// Suspends `run`, holding no thread, until `Core.runMayGoOn`.
    private func untilRunMayGoOn() async {
        await withCheckedContinuation { continuation in
            let now = core.withLock { core -> Bool in
                if core.runMayGoOn { return true }
                core.waiting = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// How `run()` ended, once it has returned.
    package var ending: Ending? { core.withLock { $0.ending } }

    /// Stops reading; the entries in flight are finished and written, then `run` returns.
    package func stop() {
        event { $0.shutdownRequested() }
    }

    /// Tells the machine what happened, waking the reader and the writer, and lets `run` go on if it may now.
    private func event(_ happened: (inout WorkerStateMachine) -> Void) {
        change { happened(&$0.machine) }
    }

    /// Changes the core, waking the threads waiting on it, and lets `run` go on if it may now.
    private func change(_ body: (inout Core) -> Void) {
        let waiting = core.update { core -> CheckedContinuation<Void, Never>? in
            body(&core)
            guard core.runMayGoOn else { return nil }
            defer { core.waiting = nil }
            return core.waiting
        }
        waiting?.resume()
    }

    /// Waits the backoff's next step, or less once `stop` holds.
    private func pause(_ delay: inout Backoff, until stop: (WorkerStateMachine) -> Bool) {
        _ = core.wait(timeout: delay.next()) { stop($0.machine) ? () : nil }
    }

    // MARK: - Start

    /// Checks or makes the group, on the start-up's thread, waiting out Redis being away or not ready yet
    /// (`RedisError.waitedOut`) with the backoff until it answers, or until reading stops: false then. Any other
    /// failure is thrown at once.
    private func prepare() throws(RedisError) -> Bool {
        let connection = RedisConnection(settings.redis, timeout: .seconds(5))
        var delay = Backoff()
        while true {
            do throws(RedisError) {
                try group.prepare(connection)
                return true
            } catch  where error.waitedOut {
                log("richpush worker: \(error.description); retrying in \(delay.current)")
                pause(&delay) { $0.readingStopped }
                if core.withLock({ $0.machine.readingStopped }) { return false }
            }
        }
    }

    // MARK: - Reading

    private func readLoop() {
        let connection = RedisConnection(settings.redis, timeout: .seconds(5))
        var delay = Backoff()
        var warnedOfEarlyReads = false
        var warnedOfUnreadDeadLetters = false
        var refusedLook: RedisError.Code?
        defer { event { $0.readerHasStopped() } }
        while true {
            let action = core.withLock { $0.machine.nextRead(now: .now) }
            do throws(RedisError) {
                switch action {
                case .stop:
                    return
                case .waitForRoom(let until):
                    _ = core.wait(timeout: max(.zero, until - .now)) { core -> Void? in
                        core.machine.readingStopped || core.machine.slots.room > 0 ? () : nil
                    }
                case .checkConnection:
                    try connection.run(["PING"])
                    core.withLock { $0.machine.connectionChecked(now: .now) }
                    delay.reset()
                case .claim(let count):
                    // Refused (an ACL without XPENDING or XCLAIM) or failing, it leaves the claim to go on as before.
                    do throws(RedisError) {
                        let unread = try group.deadLetterOverdelivered(connection)
                        metrics.count(\.deadLettered, by: unread)
                    } catch {
                        if !warnedOfUnreadDeadLetters {
                            warnedOfUnreadDeadLetters = true
                            log(
                                "richpush worker: could not dead-letter entries delivered too often without reading "
                                    + "them: \(error.description)")
                        }
                    }
                    do throws(RedisError) {
                        try group.claim(
                            connection, count: count,
                            claimed: { _ in core.withLock { $0.machine.redisAnswered() } },
                            each: { entry, deliveries in
                                metrics.count(\.claimed)
                                dispatch([entry], deliveries: deliveries)
                            })
                    } catch  where error.code == .replyTimedOut {
                        core.withLock { $0.machine.claimCut(count: count, now: .now) }
                        throw error
                    }
                    core.withLock { $0.machine.claimed(now: .now) }
                    try group.removeIdleConsumers(connection)
                case .read(let count):
                    let asked = ContinuousClock.now
                    let entries = try group.read(connection, count: count)
                    let early = core.withLock { $0.machine.read(entries.count, asked: asked, now: .now) }
                    if early, !warnedOfEarlyReads {
                        warnedOfEarlyReads = true
                        log(
                            "richpush worker: Redis answered XREADGROUP ... BLOCK 1000 at once with nothing (a proxy "
                                + "or server that does not block?): reading at most once a second while it does")
                    }
                    delay.reset()
                    dispatch(entries, deliveries: 1)
                case .recover(let count, let known):
                    var taken = 0
                    var deadLettered = 0
                    var claiming: String?
                    defer {
                        metrics.count(\.recovered, by: taken + deadLettered)
                        metrics.count(\.deadLettered, by: deadLettered)
                        if taken + deadLettered > 0 {
                            log(
                                Self.recoveredLine(
                                    taken: taken, deadLettered: deadLettered, consumer: settings.consumer))
                        }
                    }
                    do throws(RedisError) {
                        let complete = try group.recoverUnseen(
                            connection, known: known, count: count, claiming: { claiming = $0 },
                            each: { entry, deliveries in
                                taken += 1
                                dispatch([entry], deliveries: deliveries)
                            },
                            deadLettered: { _ in deadLettered += 1 })
                        core.withLock { $0.machine.recovered(complete: complete) }
                        delay.reset()
                    } catch  where error.kind == .reply {
                        // Refused (an ACL without XPENDING or XCLAIM, a look-alike server): such entries wait for a
                        // claim, as before. Said once for each reason.
                        if refusedLook != error.code {
                            refusedLook = error.code
                            log(
                                "richpush worker: could not look for entries pending for consumer "
                                    + "'\(settings.consumer)' that it never received: \(error.description)")
                        }
                        core.withLock { $0.machine.recovered(complete: true) }
                    } catch {
                        if error.code == .replyTimedOut, let claiming {
                            core.withLock { $0.machine.lookCut(id: claiming, now: .now) }
                        }
                        throw error
                    }
                case .pace(let until):
                    _ = core.wait(timeout: max(.zero, until - .now)) { core -> Void? in
                        core.machine.readingStopped ? () : nil
                    }
                }
            } catch {
                core.withLock { $0.machine.redisFailed() }
                metrics.count(\.redisErrors)
                log("richpush worker: reading: \(error.description); retrying in \(delay.current)")
                pause(&delay) { $0.readingStopped }
            }
        }
    }

    /// What the reader says when a look took entries its consumer had not received.
    static func recoveredLine(taken: Int, deadLettered: Int, consumer: String) -> String {
        func entries(_ count: Int) -> String { count == 1 ? "1 entry" : "\(count) entries" }
        var what: [String] = []
        if taken > 0 { what.append("took \(entries(taken))") }
        if deadLettered > 0 { what.append("dead-lettered \(entries(deadLettered)) unread (delivered too often)") }
        return "richpush worker: \(what.joined(separator: " and ")) pending for consumer '\(consumer)' that it had not "
            + "received (a read whose reply was lost, or an earlier process of this consumer name)"
    }

    /// Starts the work for entries read together, delivered `deliveries` times.
    private func dispatch(_ entries: [StreamEntry], deliveries: Int) {
        // Counted in flight before any can finish.
        let disposition = core.withLock { core in
            core.machine.taken(entries.lazy.map(\.id))
            return core.machine.disposition(deliveries: deliveries)
        }
        metrics.count(\.read, by: entries.count)
        for entry in entries {
            guard case .deadLetter(let reason) = disposition else {
                start(entry)
                continue
            }
            enqueue(.deadLetter(id: entry.id, reason: reason, deliveries: deliveries))
        }
    }

    /// Starts the work for one entry, counted in flight.
    private func start(_ entry: StreamEntry) {
        let id = entry.id
        // A deadline too long to be kept is refused as one that is not a number (it is none).
        let requested = entry.deadline ?? entry.oversizedDeadline.map { "<\($0) bytes>" }
        let enricher = enricher
        let configured = enricher.configuration.timeout
        let limit = group.payloadLimit
        Task {
            let result: EnrichmentResult
            switch entry.payload {
            case .bytes(let bytes):
                let timeout = requested.flatMap { Duration.requested($0, within: configured) }
                if let requested, timeout == nil {
                    // Refused, as serve answers 400 for the same `?deadline=`: ignored, it would run the entry
                    // under the worker's own deadline, longer than its sender asked.
                    result = .invalid(PayloadError(.badParameter, Duration.refusal(ofDeadline: requested)), source: id)
                } else {
                    result = await enricher.enrich(json: bytes, source: id, deadline: .now + (timeout ?? configured))
                }
            case .tooLarge(let length):
                // As the parser words it for a payload it refuses by size, without the bytes ever held.
                result = .invalid(
                    PayloadError(.payloadTooLarge, "the input is \(length) bytes; the limit is \(limit)"), source: id)
            case .missing:
                result = .invalid(PayloadError(.noPayload, "entry \(id) has no 'payload' field"), source: id)
            }
            self.metrics.service.record(result)
            self.enqueue(.result(id: id, json: result.jsonBytes(input: id)))
        }
    }

    // MARK: - Writing

    /// Queues a write for the writer, waking it (and the reader, which shares the lock's condition) only when the
    /// machine says the writer has something new to do.
    private func enqueue(_ write: WorkerStateMachine.Write) {
        core.update(wakingIf: { core in ((), core.machine.queue(write, now: .now)) })
    }

    /// The writer's next step that is not a wait, and when it was taken; waits for it (woken by the events that
    /// change it: a write queued that the machine says wakes it, a slot left, the shutdown, the drain's end).
    private func nextWrite() -> (WorkerStateMachine.WriteAction, ContinuousClock.Instant) {
        while true {
            let now = ContinuousClock.now
            let step = core.withLock { $0.machine.nextWrite(now: now) }
            guard case .wait(let until) = step else { return (step, now) }
            let changed = { (core: inout Core) -> Void? in
                if case .wait(until) = core.machine.nextWrite(now: .now) { return nil }
                return ()
            }
            if let until {
                _ = core.wait(timeout: max(.zero, until - .now), changed)
            } else {
                core.wait(changed)
            }
        }
    }

    /// Writes each result (or dead letter) with its acknowledgement, in one script; keeps a write through an
    /// outage and retries it, so a result computed is written once the server is back. Past the drain's end it
    /// writes nothing more: what is queued then stays pending.
    private func writeLoop() {
        let connection = RedisConnection(settings.redis, timeout: .seconds(5))
        var delay = Backoff()
        defer { event { $0.writerHasStopped() } }
        while true {
            let (step, taken) = nextWrite()
            guard case .write(let batch) = step else {
                // Nothing is read or written after this: the consumer may leave the group.
                if case .finish(drained: true) = step { group.removeOwnConsumer(connection) }
                return
            }
            do throws(RedisError) {
                // A batch retried after a lost reply finds its entries acknowledged: they count as dropped, and
                // their one output stands.
                let acknowledged = try group.write(batch, connection)
                delay.reset()
                let written = core.update { $0.machine.written(batch.count, acknowledged: acknowledged, taken: taken) }
                metrics.count(\.deadLettered, by: written.deadLettered)
                metrics.count(\.written, by: written.results)
                metrics.count(\.lost, by: written.dropped)
            } catch {
                metrics.count(\.redisErrors)
                core.update { $0.machine.writeFailed(error.description) }
                log("richpush worker: writing: \(error.description); retrying in \(delay.current)")
                pause(&delay) { $0.drainOver }
            }
        }
    }
}
