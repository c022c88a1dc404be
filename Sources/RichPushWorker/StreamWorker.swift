#if canImport(Glibc)
    import Glibc
#endif
import RichPush

/// `richpush worker`: one consumer of a Redis Streams consumer group. It reads payload entries as it has free
/// slots, enriches each, and for each writes one result entry and acknowledges the input in one atomic step on
/// the server (a Lua script that first checks this consumer still owns the entry). It claims entries other
/// consumers left idle, sends entries delivered too often to a dead-letter stream, survives Redis going away,
/// and drains on request.
///
/// Two threads of its own talk to Redis (blocking hiredis calls never hold the cooperative pool): the reader
/// (XREADGROUP, XAUTOCLAIM) and the writer (the scripts); the enrichment runs as Swift tasks between them.
package final class StreamWorker: LifecycleService {
    /// Where and how the worker consumes; defaults documented in the README ("Workers on Redis Streams").
    package struct Settings: Sendable {
        package var redis: RedisAddress
        package var stream: String
        package var group: String
        package var output: String
        /// Default `<hostname>-<pid>`: unique per process, and readable in `XINFO CONSUMERS`.
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
        /// Entries in process at once (read, not yet written).
        package var concurrency = 32
        /// How long a drain may wait for the entries in flight to be written.
        package var drainTimeout: Duration = .seconds(30)
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

    /// What the writer has to do for one entry.
    private enum Write: Sendable {
        case result(id: String, json: [UInt8])
        /// The payload is copied from the entry on the server: it may be larger than the worker ever holds.
        case deadLetter(id: String, reason: String, deliveries: Int)

        var isDeadLetter: Bool {
            if case .deadLetter = self { return true }
            return false
        }
    }

    private struct State {
        var writes: [Write] = []
        /// When the oldest of `writes` was queued (nil while there are none): the writer's linger runs from it.
        var oldestWrite: ContinuousClock.Instant? = nil
        /// Whether the drain's time is over (`run` was cancelled: the runner's drain timeout): from then on nothing
        /// more is written, whatever the writer is doing, and `run` returns.
        var drainOver = false
        var connected = false
        var readerDone = false
        var writerDone = false
        /// The last write's error while writes fail (nil after a write succeeds): for the drain's report.
        var writeFailure: String? = nil
        /// `run`, waiting for the reader and the writer to be done, or for the drain to be over.
        var finishing: CheckedContinuation<Void, Never>? = nil
        var ending: Ending? = nil

        var finished: Bool { (readerDone && writerDone) || drainOver }

        /// `finishing`, taken when `run` may return now.
        mutating func takeFinishing() -> CheckedContinuation<Void, Never>? {
            guard finished else { return nil }
            defer { finishing = nil }
            return finishing
        }
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

    /// What the writer does next.
    private enum WriterStep {
        case write([Write])
        case idle
        /// Done: `drained` when every entry taken was written, else the drain's end came first.
        case finish(drained: Bool)
    }

    private let settings: Settings
    /// The largest payload kept (the engine's `limits.payload.maximumBytes`): a longer one is measured as it is
    /// read, never held, and gets its `too-large` result.
    private let payloadLimit: Int
    private let batching: WriteBatching
    private let enricher: Enricher
    package let metrics: WorkerMetrics
    private let state = LockedValue(State())
    /// Admission of entries, `concurrency` at most: the reader reads only as many as there is room for, and a
    /// written entry leaves; closed by the graceful shutdown (no more is read).
    private let gate: WorkGate
    private let log: @Sendable (String) -> Void

    package init(settings: Settings, enricher: Enricher, log: @escaping @Sendable (String) -> Void) {
        self.settings = settings
        batching = WriteBatching(concurrency: settings.concurrency)
        payloadLimit = enricher.configuration.limits.payload.maximumBytes
        self.enricher = enricher
        self.log = log
        metrics = WorkerMetrics()
        gate = WorkGate(limit: settings.concurrency)
    }

    /// Entries read and not yet written.
    package var inFlight: Int { gate.inside }

    /// The worker's readiness: the reader's connection answered within the last `connectionCheck` or so (even
    /// while every slot is taken and nothing is read), the last write did not fail, and it is not draining.
    package var isReady: Bool { gate.isOpen && state.withLock { $0.connected && $0.writeFailure == nil } }

    /// How often the reader checks its connection (PING) while every slot is taken and it reads nothing. 1 s: as
    /// often as an idle reader's `XREADGROUP ... BLOCK 1000` returns, so readiness follows Redis as closely
    /// whether the worker is idle or saturated, for the cost of one PING a second.
    static let connectionCheck: Duration = .seconds(1)

    /// Runs as a service of `ServiceRunner`: reads and processes entries until the runner asks for a graceful
    /// shutdown (`stop()`), then drains: reading stops, and it returns once every entry taken is written. Cancelled
    /// (the runner's drain timeout), it returns at once, whatever the writer is doing then (a write in progress is
    /// one script on the server: it happens whole or not at all), and writes nothing more. `ending` then says which.
    /// Throws when the group cannot be found or made at the start, or Redis refuses the credentials (a mistake in the
    /// command line, not an outage: an outage is waited out).
    package func run() async throws(RedisError) {
        let started: Result<Void, RedisError> = await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                do throws(RedisError) {
                    try prepare()
                } catch {
                    return .failure(error)
                }
                startDedicatedThread { [self] in readLoop() }
                startDedicatedThread { [self] in writeLoop() }
                await withCheckedContinuation { continuation in
                    let now = state.withLock { state -> Bool in
                        if state.finished { return true }
                        state.finishing = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
                return .success(())
            } onCancel: {
                self.endDrain()
            }
        } onGracefulShutdown: {
            self.stop()
        }
        try started.get()
        let unwritten = gate.inside
        state.withLock { state in
            state.ending =
                state.readerDone && state.writerDone && unwritten == 0
                ? .drained
                : .timedOut(unwritten: unwritten, computed: state.writes.count, failure: state.writeFailure)
        }
    }

    /// How `run()` ended, once it has returned.
    package var ending: Ending? { state.withLock { $0.ending } }

    /// Stops reading; the entries in flight are finished and written, then `run` returns.
    package func stop() {
        gate.close()
    }

    /// Ends the drain now: nothing more is written, and `run` returns.
    private func endDrain() {
        gate.close()
        let finishing = state.update { state in
            state.drainOver = true
            return state.takeFinishing()
        }
        finishing?.resume()
    }

    /// Marks the reader or the writer done, letting `run` return once both are.
    private func markDone(_ done: WritableKeyPath<State, Bool>) {
        let finishing = state.update { state in
            state[keyPath: done] = true
            return state.takeFinishing()
        }
        finishing?.resume()
    }

    // MARK: - Start

    private func prepare() throws(RedisError) {
        let connection = RedisConnection(settings.redis, timeout: .seconds(5))
        var delay = Backoff()
        while true {
            do throws(RedisError) {
                if settings.createGroup {
                    do throws(RedisError) {
                        try connection.run(["XGROUP", "CREATE", settings.stream, settings.group, "0", "MKSTREAM"])
                    } catch where !error.connection && error.description.hasPrefix("BUSYGROUP") {}
                }
                let groups = try connection.run(["XINFO", "GROUPS", settings.stream]).elements
                let names = groups.compactMap { Self.field("name", in: $0.elements)?.text }
                guard names.contains(settings.group) else {
                    throw RedisError(
                        detail:
                            "stream '\(settings.stream)' has no group '\(settings.group)' (--create-group makes it)",
                        kind: .reply)
                }
                return
            } catch where error.connection {
                log("richpush worker: \(error.description); retrying in \(delay.current)")
                delay.wait(until: { !self.gate.isOpen })
                if !gate.isOpen { throw error }
            } catch where error.description.hasPrefix("ERR no such key") {
                throw RedisError(
                    detail: "stream '\(settings.stream)' does not exist (--create-group makes it)", kind: .reply)
            }
        }
    }

    // MARK: - Reading

    private func readLoop() {
        let connection = RedisConnection(settings.redis, timeout: .seconds(5))
        var delay = Backoff()
        var nextClaim = ContinuousClock.now
        var nextCheck = ContinuousClock.now
        defer { markDone(\.readerDone) }
        while gate.isOpen {
            let free = gate.room
            do throws(RedisError) {
                guard free > 0 else {
                    // Saturated: nothing is read until a slot frees, but the connection is checked meanwhile, so
                    // that readiness does not go on saying "connected" about a Redis that went away.
                    if ContinuousClock.now >= nextCheck {
                        try connection.run(["PING"])
                        markConnected(true)
                        delay.reset()
                        nextCheck = .now + Self.connectionCheck
                    }
                    _ = gate.waitForRoom(timeout: .milliseconds(100))
                    continue
                }
                // Each command below answers within about a second (BLOCK 1000), which checks the connection too.
                nextCheck = .now + Self.connectionCheck
                if ContinuousClock.now >= nextClaim {
                    try claim(connection, free: free)
                    nextClaim = .now + settings.claimIdle / 2
                    try removeIdleConsumers(connection)
                    continue
                }
                let entries = try connection.entries(
                    [
                        "XREADGROUP", "GROUP", settings.group, settings.consumer, "COUNT", String(free), "BLOCK",
                        "1000",
                        "STREAMS", settings.stream, ">",
                    ], reply: .streams, payloadLimit: payloadLimit, most: free)
                markConnected(true)
                delay.reset()
                dispatch(entries, deliveries: 1)
            } catch {
                markConnected(false)
                metrics.count(\.redisErrors)
                log("richpush worker: reading: \(error.description); retrying in \(delay.current)")
                delay.wait(until: { !self.gate.isOpen })
            }
        }
    }

    /// Claims entries idle longer than `claimIdle` (XAUTOCLAIM), up to `free`; those delivered too often go to
    /// the dead-letter stream, the others are processed here.
    private func claim(_ connection: RedisConnection, free: Int) throws(RedisError) {
        let idle = String(settings.claimIdle.inMilliseconds)
        let entries = try connection.entries(
            ["XAUTOCLAIM", settings.stream, settings.group, settings.consumer, idle, "0-0", "COUNT", String(free)],
            reply: .autoclaim, payloadLimit: payloadLimit, most: free)
        markConnected(true)
        for entry in entries {
            let id = entry.id
            let pending = try connection.run(["XPENDING", settings.stream, settings.group, id, id, "1"])
            let deliveries =
                pending.elements.first?.elements.dropFirst(3).first.flatMap {
                    if case .integer(let count) = $0 { return count }
                    return nil
                } ?? 1
            metrics.count(\.claimed)
            dispatch([entry], deliveries: deliveries)
        }
    }

    /// Removes the other consumers of the group that have no pending entry and have been idle longer than
    /// `removeIdleConsumers` (workers killed, or gone without their clean exit), and says which.
    /// Redis refusing it (an ACL user without XINFO or XGROUP) is logged, not retried: the worker's own work does
    /// not need it.
    private func removeIdleConsumers(_ connection: RedisConnection) throws(RedisError) {
        guard let age = settings.removeIdleConsumers else { return }
        let removed: [String]
        do throws(RedisError) {
            removed = try connection.run([
                "EVAL", Self.removeIdleConsumersScript, "1", settings.stream, settings.group,
                String(age.inMilliseconds),
                settings.consumer,
            ]).elements.compactMap(\.text)
        } catch where error.kind == .reply {
            log("richpush worker: could not remove idle consumers: \(error.description)")
            return
        }
        if !removed.isEmpty {
            log(
                "richpush worker: removed consumers idle over \(age) without pending entries: \(removed.joined(separator: ", "))"
            )
        }
    }

    /// At a clean exit, removes this consumer from the group unless entries are pending for it (removing it would
    /// lose them): one attempt, as the process is ending; another worker removes it later otherwise.
    private func removeOwnConsumer(_ connection: RedisConnection) {
        do throws(RedisError) {
            try connection.run([
                "EVAL", Self.removeConsumerScript, "1", settings.stream, settings.group, settings.consumer,
            ])
        } catch {
            log(
                "richpush worker: could not remove consumer '\(settings.consumer)' from the group: \(error.description)"
            )
        }
    }

    /// Starts the work for entries read together, delivered `deliveries` times.
    private func dispatch(_ entries: [StreamEntry], deliveries: Int) {
        // Counted in flight before any can finish, even when the gate closed during the read: they were delivered
        // to this consumer, and the reader read no more than the room it saw.
        gate.enter(taken: entries.count)
        metrics.count(\.read, by: entries.count)
        for entry in entries { start(entry, deliveries: deliveries) }
    }

    /// Starts the work for one entry, counted in flight.
    private func start(_ entry: StreamEntry, deliveries: Int) {
        let id = entry.id
        if deliveries > settings.maximumDeliveries {
            enqueue(
                .deadLetter(id: id, reason: "delivered \(deliveries) times without a result", deliveries: deliveries))
            return
        }
        let requested = entry.deadline
        let enricher = enricher
        let configured = enricher.configuration.deadline
        let limit = payloadLimit
        Task {
            let result: EnrichmentResult
            switch entry.payload {
            case .bytes(let bytes):
                let timeout = requested.flatMap { Duration.requested($0, within: configured) } ?? configured
                result = await enricher.enrich(json: bytes, source: id, deadline: .now + timeout)
            case .tooLarge(let length):
                // As the parser words it for a payload it refuses by size, without the bytes ever held.
                result = .invalid(
                    PayloadError(.tooLarge, "the input is \(length) bytes; the limit is \(limit)"), source: id)
            case .missing:
                result = .invalid(PayloadError(.noPayload, "entry \(id) has no 'payload' field"), source: id)
            }
            self.metrics.service.record(result)
            self.enqueue(.result(id: id, json: JSONWriter.bytes(result.json(input: id))))
        }
    }

    // MARK: - Writing

    /// Queues a write for the writer, waking it (and the reader, which shares the lock's condition) only when the
    /// writer has something new to do: a first write (its linger starts), a batch filled by this one, or a dead
    /// letter (written alone, at once).
    private func enqueue(_ write: Write) {
        state.update(wakingIf: { state in
            if state.writes.isEmpty { state.oldestWrite = .now }
            state.writes.append(write)
            let wake = write.isDeadLetter || batching.wakesWriter(queued: state.writes.count, inFlight: gate.inside)
            return ((), wake)
        })
    }

    /// Whether every entry taken is written and no more will be read (under the state's lock).
    private func drainedAll(_ state: State) -> Bool {
        !gate.isOpen && state.readerDone && gate.inside == 0
    }

    /// Writes each result (or dead letter) with its acknowledgement, in one script; keeps a write through an
    /// outage and retries it, so a result computed is written once the server is back. Past the drain's end it
    /// writes nothing more: what is queued then stays pending.
    private func writeLoop() {
        let connection = RedisConnection(settings.redis, timeout: .seconds(5))
        var delay = Backoff()
        defer { markDone(\.writerDone) }
        while true {
            // Results go in batches (`WriteBatching`: one script call, one round trip, for many); a dead letter
            // alone, at once.
            // Woken by a result queued, or at once by the end of the work (its last entry written once reading
            // stopped, or the drain's time over), so that a drained worker exits when it is done.
            let woken = state.wait(timeout: .milliseconds(200)) { state -> ContinuousClock.Instant?? in
                if let oldest = state.oldestWrite { return oldest }
                return state.drainOver || drainedAll(state) ? .some(nil) : nil
            }
            if let oldest = woken ?? nil {
                let lingerEnds = oldest + batching.linger
                if lingerEnds > .now {
                    _ = state.wait(timeout: lingerEnds - .now) { state -> Void? in
                        let (queued, inFlight) = (state.writes.count, gate.inside)
                        let due = batching.due(queued: queued, inFlight: inFlight, oldest: oldest, now: .now)
                        return due || state.writes.first?.isDeadLetter == true ? () : nil
                    }
                }
            }
            let taken = ContinuousClock.now
            let step = state.withLock { state -> WriterStep in
                if state.drainOver { return .finish(drained: false) }
                guard let first = state.writes.first else {
                    return drainedAll(state) ? .finish(drained: true) : .idle
                }
                if first.isDeadLetter { return .write([first]) }
                return .write(Array(state.writes.prefix { !$0.isDeadLetter }.prefix(WriteBatching.maximum)))
            }
            guard case .write(let batch) = step else {
                if case .finish(let drained) = step {
                    // Nothing is read or written after this: the consumer may leave the group.
                    if drained { removeOwnConsumer(connection) }
                    return
                }
                continue
            }
            do throws(RedisError) {
                // A batch retried after a lost reply finds its entries acknowledged: they count as dropped, and
                // their one output stands.
                let written = try write(batch, connection)
                delay.reset()
                state.update { state in
                    state.writes.removeFirst(batch.count)
                    gate.leave(batch.count)
                    state.writeFailure = nil
                    // What is left was queued while this batch was written (or did not fit in it): its linger
                    // runs from the moment this batch was taken.
                    state.oldestWrite = state.writes.isEmpty ? nil : taken
                }
                let deadLetters = zip(batch, written).filter { $0.0.isDeadLetter && $0.1 }.count
                let done = written.filter { $0 }.count
                metrics.count(\.deadLettered, by: deadLetters)
                metrics.count(\.written, by: done - deadLetters)
                metrics.count(\.lost, by: written.count - done)
            } catch {
                metrics.count(\.redisErrors)
                state.withLock { $0.writeFailure = error.description }
                log("richpush worker: writing: \(error.description); retrying in \(delay.current)")
                delay.wait(until: { self.state.withLock { $0.drainOver } })
            }
        }
    }

    /// The writes and acknowledgements of a batch of results, or of one dead letter, each only while this
    /// consumer owns its entry; whether each was done.
    private func write(_ batch: [Write], _ connection: RedisConnection) throws(RedisError) -> [Bool] {
        let reply: RedisValue
        if case .deadLetter(let id, let reason, let deliveries) = batch[0] {
            reply = try connection.run([
                "EVAL", Self.deadLetterScript, "2", settings.stream, settings.deadLetter, settings.group,
                settings.consumer,
                id, reason, String(deliveries),
            ])
            return [reply == .integer(1)]
        }
        var arguments = [
            Array("EVAL".utf8), Array(Self.writeScript.utf8), Array("2".utf8), Array(settings.stream.utf8),
            Array(settings.output.utf8), Array(settings.group.utf8), Array(settings.consumer.utf8),
        ]
        for case .result(let id, let json) in batch {
            arguments.append(Array(id.utf8))
            arguments.append(json)
        }
        reply = try connection.run(bytes: arguments)
        return reply.elements.map { $0 == .integer(1) }
    }

    /// KEYS: input, output. ARGV: group, consumer, then an id and its result for each entry. For each, writes
    /// the result only if the entry is still pending for this consumer (another may have claimed it), and only
    /// once should an id come twice; then acknowledges every entry written, in one XACK: 1 for each written,
    /// else 0. The per-entry check is XPENDING with the consumer filter (Redis 6.2, as XAUTOCLAIM), so that Redis
    /// answers only for an entry this consumer owns. One XACK for the batch instead of one an entry: each call
    /// inside a script costs about a microsecond of Redis's CPU besides the command's own work.
    static let writeScript = """
        local done, acknowledged, seen = {}, {}, {}
        for i = 3, #ARGV, 2 do
          local id = ARGV[i]
          if not seen[id] and #redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1, ARGV[2]) > 0 then
            seen[id] = true
            redis.call('XADD', KEYS[2], '*', 'source', id, 'result', ARGV[i + 1])
            acknowledged[#acknowledged + 1] = id
            done[#done + 1] = 1
          else
            done[#done + 1] = 0
          end
        end
        if #acknowledged > 0 then redis.call('XACK', KEYS[1], ARGV[1], unpack(acknowledged)) end
        return done
        """

    /// KEYS: input, dead-letter stream. ARGV: group, consumer, id, reason, deliveries. As `writeScript`, for an
    /// entry delivered too often; its payload (empty when it has none, or was deleted) is copied on the server.
    static let deadLetterScript = """
        local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
        if #p == 0 or p[1][2] ~= ARGV[2] then return 0 end
        local payload, entry = '', redis.call('XRANGE', KEYS[1], ARGV[3], ARGV[3])[1]
        if entry then
          for i = 1, #entry[2] - 1, 2 do
            if entry[2][i] == 'payload' then payload = entry[2][i + 1] break end
          end
        end
        redis.call('XADD', KEYS[2], '*', 'source', ARGV[3], 'payload', payload, 'reason', ARGV[4], 'deliveries', ARGV[5])
        redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
        return 1
        """

    /// KEYS: input. ARGV: group, consumer. Removes the consumer if no entry is pending for it, in one step (no
    /// entry can be delivered to it in between): 1 removed, 0 kept.
    static let removeConsumerScript = """
        if #redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2]) > 0 then return 0 end
        redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
        return 1
        """

    /// KEYS: input. ARGV: group, an age in milliseconds, this consumer. Removes the other consumers with no pending
    /// entry idle longer than the age; returns their names. `idle` is the time since the consumer's last read or
    /// claim (a live worker's reader comes back every second, or holds entries pending).
    static let removeIdleConsumersScript = """
        local removed = {}
        for _, consumer in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
          local fields = {}
          for i = 1, #consumer, 2 do fields[consumer[i]] = consumer[i + 1] end
          if fields['pending'] == 0 and fields['idle'] > tonumber(ARGV[2]) and fields['name'] ~= ARGV[3] then
            redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], fields['name'])
            removed[#removed + 1] = fields['name']
          end
        end
        return removed
        """

    // MARK: - Helpers

    private func markConnected(_ connected: Bool) {
        state.withLock { $0.connected = connected }
    }

    /// The value of `name` in a flat `[field, value, ...]` list.
    static func field(_ name: String, in fields: [RedisValue]) -> RedisValue? {
        var index = 0
        while index + 1 < fields.count {
            if fields[index].text == name { return fields[index + 1] }
            index += 2
        }
        return nil
    }

}

/// Exponential backoff with jitter for reconnecting: 100 ms doubling to 5 s, each wait between half and all of
/// the current step (so that many workers do not reconnect in step after a restart).
struct Backoff {
    private(set) var current: Duration = .milliseconds(100)
    static let ceiling: Duration = .seconds(5)

    mutating func reset() { current = .milliseconds(100) }

    /// Sleeps this thread for the current step (in slices, returning early once `stop` holds), then doubles it.
    mutating func wait(until stop: () -> Bool) {
        let milliseconds = current.inMilliseconds
        var left = milliseconds / 2 + Int.random(in: 0...(milliseconds / 2))
        while left > 0, !stop() {
            usleep(UInt32(min(left, 50)) * 1000)
            left -= 50
        }
        current = min(current * 2, Self.ceiling)
    }
}
