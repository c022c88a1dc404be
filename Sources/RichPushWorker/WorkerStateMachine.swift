import RichPush

/// The decisions of `StreamWorker`, without I/O, in the shape of async-http-client's connection-pool state machine:
/// the driver tells it what happened (entries taken, a result ready, a write acknowledged or refused, Redis
/// answering or not, the graceful shutdown, the drain's end, its reader or writer stopping) and asks it what to do
/// next (read or claim how many, check the connection, wait, write which results, finish). It reads no clock: the
/// driver passes the time. Tested without Redis (`WorkerStateMachineTests`).
///
/// Admission is the gate's counting (`WorkGate.Slots`): an entry takes a slot when it is read or claimed and leaves
/// it when its write is done (written, dead-lettered, or dropped as another consumer's), so the reader never reads
/// more than `concurrency` minus the entries in flight.
struct WorkerStateMachine {
    /// What the writer has to do for one entry.
    enum Write: Sendable, Equatable {
        case result(id: String, json: [UInt8])
        /// The payload is copied from the entry on the server: it may be larger than the worker ever holds.
        case deadLetter(id: String, reason: String, deliveries: Int)

        var isDeadLetter: Bool {
            if case .deadLetter = self { return true }
            return false
        }

        /// The entry's id.
        var id: String {
            switch self {
            case .result(let id, _), .deadLetter(let id, _, _): return id
            }
        }
    }

    /// What the reader does next.
    enum ReadAction: Sendable, Equatable {
        /// Reading is over (the graceful shutdown or the drain's end): the reader stops.
        case stop
        /// Claim up to `count` entries idle past `--claim-idle` (XAUTOCLAIM); then remove idle consumers.
        case claim(count: Int)
        /// Read up to `count` new entries (XREADGROUP, blocking up to a second).
        case read(count: Int)
        /// The last read came back empty sooner than its block: wait until `until` (or reading stops) before the
        /// next, so that a server that does not block (a proxy, a look-alike) is not asked again at once, in a loop.
        case pace(until: ContinuousClock.Instant)
        /// Every slot is taken: check that Redis still answers (PING), so that readiness follows it.
        case checkConnection
        /// Every slot is taken and the connection was checked lately: wait until a slot frees, reading stops, or
        /// `until` (the next check) comes.
        case waitForRoom(until: ContinuousClock.Instant)
        /// Look for entries pending for this consumer that the worker never received (none of `known`, the ids in
        /// flight), and take up to `count` of them (XPENDING, then XCLAIM each by its id): Redis delivered them to a
        /// read whose reply was lost, or to an earlier process of the same consumer name.
        case recover(count: Int, known: Set<String>)
    }

    /// What the writer does next.
    enum WriteAction: Sendable, Equatable {
        /// Write these (results in one script call, or one dead letter alone), each with its acknowledgement.
        case write([Write])
        /// Nothing is due: wait until something happens, or until `until` (a batch's linger ends) when given.
        case wait(until: ContinuousClock.Instant?)
        /// Done: `drained` when every entry taken was written (the consumer may then leave the group), else the
        /// drain's end came first.
        case finish(drained: Bool)
    }

    /// What becomes of an entry taken.
    enum Disposition: Sendable, Equatable {
        /// Enrich it and write its result.
        case process
        /// Delivered too often: write it to the dead-letter stream without processing it.
        case deadLetter(reason: String)
    }

    /// What a batch's write did, for the metrics.
    struct Written: Sendable, Equatable {
        /// Results written with their acknowledgement.
        var results = 0
        /// Dead letters written with their acknowledgement.
        var deadLettered = 0
        /// Writes dropped because another consumer owns the entry now (claimed it meanwhile).
        var dropped = 0
    }

    /// An entry delivered more often than this goes to the dead-letter stream (`--max-deliveries`).
    let maximumDeliveries: Int
    /// How often the reader claims idle entries: half of `--claim-idle`, so that an entry idle past it waits at
    /// most half as long again.
    let claimEvery: Duration
    /// How often the reader checks its connection while every slot is taken and it reads nothing.
    let connectionCheck: Duration
    /// When results are written together.
    let batching: WriteBatching
    /// The entries in flight (taken, not yet written) and whether more may be read.
    private(set) var slots: WorkGate.Slots
    /// The ids of the entries in flight, each with how many times it is (an entry claimed back while in flight, past
    /// `--claim-idle`, is in flight twice): what a look for entries never received leaves out.
    private var inFlightIDs: [String: Int] = [:]
    /// Whether entries may be pending for this consumer that the worker never received, to look for before the next
    /// read: at the start (an earlier process of the same consumer name may have left some), and after a reader's
    /// command failed (Redis may have delivered entries to a read whose reply was lost).
    private var unseenMayBePending = true
    /// The entries whose claim by a look was cut (too large for the link, or Redis stalled), each with when a look
    /// may try it again: `claimEvery` later. Until then looks leave it out, so that reading goes on meanwhile (the
    /// look after each cut found it first again, and the reader looked and never read, a delivery counted each
    /// time); the claim takes it after `--claim-idle`, as before.
    private var cutLooks: [String: ContinuousClock.Instant] = [:]
    /// Whether the drain's one look for entries never received was asked for.
    private var drainLooked = false
    /// The writes queued, oldest first.
    private(set) var writes: [Write] = []
    /// When the oldest of `writes` was queued (nil while there are none): the writer's linger runs from it.
    private var oldestWrite: ContinuousClock.Instant? = nil
    /// Whether the drain's time is over: from then on nothing more is written, and `run` returns.
    private(set) var drainOver = false
    /// Whether the reader's last command was answered.
    private var connected = false
    /// The last write's error while writes fail (nil after a write succeeds): for readiness and the drain's report.
    private(set) var writeFailure: String? = nil
    private var readerStopped = false
    private var writerStopped = false
    private var nextClaim: ContinuousClock.Instant
    /// The most entries the next claim asks for: halved by each claim whose reply was too slow to read (cut), back
    /// to every free slot after one that is read; nil for every free slot.
    private var claimLimit: Int? = nil
    private var nextCheck: ContinuousClock.Instant
    /// No read before this: set when a read came back empty sooner than its block.
    private var nextRead: ContinuousClock.Instant? = nil
    /// How long a read blocks for new entries (XREADGROUP's `BLOCK`, in milliseconds).
    static let readBlock: Duration = .seconds(1)
    /// The most entries the drain's look takes without a concurrency limit (the worker always has one).
    static let drainRecoveryLimit = 256

    /// A worker of `settings` starting at `now`, checking its connection every `connectionCheck` while it reads
    /// nothing: it claims first, then reads.
    init(settings: StreamWorker.Settings, connectionCheck: Duration, now: ContinuousClock.Instant) {
        maximumDeliveries = settings.maximumDeliveries
        claimEvery = settings.claimIdle / 2
        self.connectionCheck = connectionCheck
        batching = WriteBatching(concurrency: settings.concurrency)
        slots = WorkGate.Slots(limit: settings.concurrency)
        nextClaim = now
        nextCheck = now
    }

    // MARK: - Decisions

    /// What the reader does next, at `now`. A read or claim asked for counts as a connection check: each answers
    /// within about a second (`BLOCK 1000`).
    mutating func nextRead(now: ContinuousClock.Instant) -> ReadAction {
        guard slots.open else {
            // Before it stops, the reader looks once for entries pending for this consumer that it never received,
            // up to the concurrency whatever the room: they were delivered to it, and written now they need not wait
            // for another consumer's claim; without this, the drain left them and kept the consumer. Not when its
            // last command failed: Redis stalled or away would only make the drain wait for another timeout.
            guard !drainLooked, !drainOver, connected else { return .stop }
            drainLooked = true
            return .recover(count: slots.limit ?? Self.drainRecoveryLimit, known: skippedByLooks(now: now))
        }
        let free = slots.room
        guard free > 0 else {
            // Saturated: nothing is read until a slot frees, but the connection is checked meanwhile, so that
            // readiness does not go on saying "connected" about a Redis that went away.
            return now >= nextCheck ? .checkConnection : .waitForRoom(until: nextCheck)
        }
        if unseenMayBePending {
            nextCheck = now + connectionCheck
            return .recover(count: free, known: skippedByLooks(now: now))
        }
        if now >= nextClaim {
            nextCheck = now + connectionCheck
            return .claim(count: min(free, claimLimit ?? free))
        }
        if let nextRead, now < nextRead { return .pace(until: nextRead) }
        nextCheck = now + connectionCheck
        return .read(count: free)
    }

    /// What the writer does next, at `now`. Results go in batches (`WriteBatching`: one script call, one round
    /// trip, for many), a dead letter alone and at once.
    func nextWrite(now: ContinuousClock.Instant) -> WriteAction {
        if drainOver { return .finish(drained: false) }
        guard let first = writes.first, let oldest = oldestWrite else {
            return drainedAll ? .finish(drained: true) : .wait(until: nil)
        }
        if first.isDeadLetter { return .write([first]) }
        guard batching.due(queued: writes.count, inFlight: slots.inside, oldest: oldest, now: now) else {
            return .wait(until: oldest + batching.linger)
        }
        return .write(Array(writes.prefix { !$0.isDeadLetter }.prefix(WriteBatching.maximum)))
    }

    /// What becomes of an entry delivered `deliveries` times.
    func disposition(deliveries: Int) -> Disposition {
        guard deliveries > maximumDeliveries else { return .process }
        return .deadLetter(reason: Self.overdelivered(deliveries))
    }

    /// Why an entry delivered `deliveries` times goes to the dead-letter stream.
    static func overdelivered(_ deliveries: Int) -> String { "delivered \(deliveries) times without a result" }

    /// Whether the worker is ready: reading, Redis answering, and the last write not failed.
    var isReady: Bool { slots.open && connected && writeFailure == nil }

    /// Entries taken and not yet written.
    var inFlight: Int { slots.inside }

    /// Whether the reader has stopped reading (or must): the graceful shutdown or the drain's end.
    var readingStopped: Bool { !slots.open }

    /// Whether `run` may return: the reader and the writer have stopped, or the drain's time is over.
    var isFinished: Bool { (readerStopped && writerStopped) || drainOver }

    /// How the work ended, once `isFinished`.
    var ending: StreamWorker.Ending {
        readerStopped && writerStopped && slots.inside == 0
            ? .drained : .timedOut(unwritten: slots.inside, computed: writes.count, failure: writeFailure)
    }

    /// Every entry taken is written and no more will be read.
    private var drainedAll: Bool { !slots.open && readerStopped && slots.inside == 0 }

    // MARK: - Events

    /// Entries `ids` were read or claimed. They take their slots even when reading stopped during the read: they
    /// were delivered to this consumer, and the reader read no more than the room it saw.
    mutating func taken(_ ids: some Collection<String>) {
        slots.enter(taken: ids.count)
        for id in ids { inFlightIDs[id, default: 0] += 1 }
    }

    /// What a look leaves out at `now`: the entries in flight, and those whose claim by a look was cut less than
    /// `claimEvery` ago (forgetting the older ones).
    private mutating func skippedByLooks(now: ContinuousClock.Instant) -> Set<String> {
        cutLooks = cutLooks.filter { $0.value > now }
        return Set(inFlightIDs.keys).union(cutLooks.keys)
    }

    /// A look for entries never received (`.recover`) was answered: `complete` when it found every one there was
    /// (else more remain, beyond its count: the next look goes on), or when Redis refused it (it is not tried again
    /// until the next failure).
    mutating func recovered(complete: Bool) {
        connected = true
        unseenMayBePending = !complete
    }

    /// A look's claim of entry `id` was cut at `now` (its reply too slow to read whole): looks leave it out for
    /// `claimEvery`. (The reader's failure, told next, asks for another look, which goes on without it.)
    mutating func lookCut(id: String, now: ContinuousClock.Instant) {
        cutLooks[id] = now + claimEvery
    }

    /// Redis answered the reader (a read, a claim).
    mutating func redisAnswered() {
        connected = true
    }

    /// A read asked at `asked` was answered at `now` with `count` entries. An empty answer sooner than the block
    /// (less than 90% of it) is a server that did not block: the next read waits for the block's end. Returns
    /// whether that is so.
    @discardableResult
    mutating func read(_ count: Int, asked: ContinuousClock.Instant, now: ContinuousClock.Instant) -> Bool {
        connected = true
        let early = count == 0 && now - asked < Self.readBlock * 0.9
        nextRead = early ? asked + Self.readBlock : nil
        return early
    }

    /// Redis answered the reader's connection check at `now`.
    mutating func connectionChecked(now: ContinuousClock.Instant) {
        connected = true
        nextCheck = now + connectionCheck
    }

    /// The idle entries were claimed at `now`: the next claim comes `claimEvery` later. (A claim that fails is
    /// tried again at the next read.)
    mutating func claimed(now: ContinuousClock.Instant) {
        connected = true
        nextClaim = now + claimEvery
        claimLimit = nil
    }

    /// A claim of `count` entries was cut at `now`, its reply too slow to read whole (large entries over a slow
    /// link): the next asks for half as many, `claimEvery` later, and reads go on meanwhile. (Tried again at once,
    /// the same entries came first again, and were cut again: the reader claimed and never read.)
    mutating func claimCut(count: Int, now: ContinuousClock.Instant) {
        claimLimit = max(1, count / 2)
        nextClaim = now + claimEvery
    }

    /// A reader's command failed (Redis down, or refusing): Redis may have delivered entries to it whose reply was
    /// lost, so the reader looks for them before its next read.
    mutating func redisFailed() {
        connected = false
        unseenMayBePending = true
    }

    /// A result or dead letter is ready to be written; whether the writer must be woken for it: it starts a batch
    /// (the linger starts), it fills one, or it is a dead letter (written alone, at once). Results in between wake
    /// no one: the writer's linger ends by itself.
    mutating func queue(_ write: Write, now: ContinuousClock.Instant) -> Bool {
        if writes.isEmpty { oldestWrite = now }
        writes.append(write)
        return write.isDeadLetter || batching.wakesWriter(queued: writes.count, inFlight: slots.inside)
    }

    /// The first `count` writes (taken at `taken`) were run; `acknowledged` says, for each, whether it was written
    /// and acknowledged. One not acknowledged was another consumer's by then (claimed meanwhile): it is dropped, not
    /// tried again, as that consumer writes its own. Each leaves its slot.
    mutating func written(_ count: Int, acknowledged: [Bool], taken: ContinuousClock.Instant) -> Written {
        let batch = writes.prefix(count)
        for write in batch {
            if let times = inFlightIDs[write.id] { inFlightIDs[write.id] = times > 1 ? times - 1 : nil }
        }
        writes.removeFirst(count)
        slots.leave(count)
        writeFailure = nil
        // What is left was queued while this batch was written (or did not fit in it): its linger runs from the
        // moment this batch was taken.
        oldestWrite = writes.isEmpty ? nil : taken
        let deadLettered = zip(batch, acknowledged).filter { $0.0.isDeadLetter && $0.1 }.count
        let done = acknowledged.filter { $0 }.count
        return Written(results: done - deadLettered, deadLettered: deadLettered, dropped: acknowledged.count - done)
    }

    /// A write failed (Redis down): it stays first in the queue, to be tried again.
    mutating func writeFailed(_ reason: String) {
        writeFailure = reason
    }

    /// The graceful shutdown: no more is read; the entries in flight are finished and written.
    mutating func shutdownRequested() {
        _ = slots.close()
    }

    /// The drain's time is over (the runner's drain timeout): nothing more is read or written.
    mutating func drainDeadlinePassed() {
        _ = slots.close()
        drainOver = true
    }

    /// The reader has stopped.
    mutating func readerHasStopped() {
        readerStopped = true
    }

    /// The writer has stopped.
    mutating func writerHasStopped() {
        writerStopped = true
    }
}
