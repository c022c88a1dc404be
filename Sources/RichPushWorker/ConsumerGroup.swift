import RichPush

/// The Redis commands of one consumer of a consumer group, as `StreamWorker`'s driver runs them: each a blocking
/// call on a connection of the calling thread. What to run and when is `WorkerStateMachine`'s decision.
struct ConsumerGroup: Sendable {
    let settings: StreamWorker.Settings
    /// The largest payload kept; a longer one is measured as it is read, never held.
    let payloadLimit: Int
    let log: @Sendable (String) -> Void

    /// Checks that the group exists, making it (and the stream) first with `createGroup`.
    /// - Throws: `RedisError`: the stream or the group is missing (a message naming it and `--create-group`), or
    ///   any failure of the commands (the caller waits out an outage).
    func prepare(_ connection: RedisConnection) throws(RedisError) {
        if settings.createGroup {
            do throws(RedisError) {
                try connection.run(["XGROUP", "CREATE", settings.stream, settings.group, "0", "MKSTREAM"])
            } catch  where error.code == .busyGroup {}
        }
        let groups: [RedisValue]
        do throws(RedisError) {
            groups = try connection.run(["XINFO", "GROUPS", settings.stream]).elements
        } catch  where error.code == .noSuchKey {
            throw RedisError(
                .noSuchKey, detail: "stream '\(settings.stream)' does not exist (--create-group makes it)")
        }
        let names = groups.compactMap { Self.field("name", in: $0.elements)?.text }
        guard names.contains(settings.group) else {
            throw RedisError(
                .noGroup,
                detail: "stream '\(settings.stream)' has no group '\(settings.group)' (--create-group makes it)")
        }
    }

    /// Reads up to `count` new entries (XREADGROUP), waiting up to a second for them.
    func read(_ connection: RedisConnection, count: Int) throws(RedisError) -> [StreamEntry] {
        try connection.entries(
            [
                "XREADGROUP", "GROUP", settings.group, settings.consumer, "COUNT", String(count), "BLOCK",
                String(WorkerStateMachine.readBlock.inMilliseconds),
                "STREAMS", settings.stream, ">",
            ], reply: .streams, payloadLimit: payloadLimit, most: count)
    }

    /// Claims up to `count` entries idle longer than `claimIdle` (XAUTOCLAIM), calling `claimed` first with their
    /// number (Redis answered), then with each entry and how often it was delivered (XPENDING), as soon as that is
    /// known. The entries are this consumer's once XAUTOCLAIM answered: when an XPENDING fails, each entry left is
    /// still handed over, as delivered twice (the least a claimed entry was: once before, once by this claim), and
    /// the failure thrown after (else they waited another `claimIdle`, a delivery more counted for nothing).
    func claim(
        _ connection: RedisConnection, count: Int, claimed: (Int) -> Void, each: (StreamEntry, Int) -> Void
    ) throws(RedisError) {
        let idle = String(settings.claimIdle.inMilliseconds)
        let entries = try connection.entries(
            ["XAUTOCLAIM", settings.stream, settings.group, settings.consumer, idle, "0-0", "COUNT", String(count)],
            reply: .autoclaim, payloadLimit: payloadLimit, most: count)
        claimed(entries.count)
        var failure: RedisError?
        for entry in entries {
            var deliveries: Int?
            if failure == nil {
                do throws(RedisError) { deliveries = try self.deliveries(of: entry.id, connection) } catch {
                    failure = error
                }
            }
            each(entry, deliveries ?? Self.leastClaimedDeliveries)
        }
        if let failure { throw failure }
    }

    /// Takes up to `count` of the entries pending for this consumer that the worker never received (any not in
    /// `known`: the ids in flight, and those whose claim by an earlier look was cut): Redis delivered them to a read
    /// whose reply was lost (the connection dropped while Redis stalled), or to an earlier process of the same
    /// consumer name. Each is claimed again by its id (XCLAIM; `claiming` is told its id before, nil after): its
    /// payload sent, its idle time reset so that no other consumer claims it while it is processed, a delivery
    /// counted (so that an entry whose processing kills the worker is still dead-lettered after `maximumDeliveries`
    /// restarts); then handed to `each` with how often it was delivered. One deleted since is handed over without
    /// payload (its result says so) on Redis 6.2, which answers null for it and keeps it pending, and left on Redis 7,
    /// which drops it from the pending entries. One delivered `maximumDeliveries` times already is dead-lettered
    /// unread, as `deadLetterOverdelivered` does (`deadLettered` is told its id): its payload is not sent again.
    /// Returns whether every such entry was found: false when more may remain past `count`.
    ///
    /// Why: they were otherwise left until another consumer's claim, `claimIdle` later (60 s by default), and a
    /// drain left them pending and its consumer in the group.
    func recoverUnseen(
        _ connection: RedisConnection, known: Set<String>, count: Int, claiming: (String?) -> Void = { _ in },
        each: (StreamEntry, Int) -> Void, deadLettered: (String) -> Void
    ) throws(RedisError) -> Bool {
        // Every entry in flight may come first: the look covers them and `count` more.
        let look = known.count + count
        let pending = try pendingEntries(
            ["XPENDING", settings.stream, settings.group, "-", "+", String(look), settings.consumer], connection)
        let unseen = pending.filter { !known.contains($0.id) }
        for entry in unseen.prefix(count) {
            if entry.deliveries >= settings.maximumDeliveries {
                if try deadLetterUnread(entry, connection) { deadLettered(entry.id) }
                continue
            }
            claiming(entry.id)
            // At least as idle as it was: an entry another consumer claimed meanwhile (its idle time reset) stays its.
            let claimed = try connection.claimedEntries(
                ["XCLAIM", settings.stream, settings.group, settings.consumer, String(entry.idle), entry.id],
                payloadLimit: payloadLimit, most: 1)
            claiming(nil)
            guard let first = claimed.first else { continue }
            each(first ?? StreamEntry(id: entry.id, payload: .missing, deadline: nil), entry.deliveries + 1)
        }
        return pending.count < look && unseen.count <= count
    }

    /// An entry of XPENDING's extended form, `[id, consumer, idle milliseconds, deliveries]`.
    struct PendingEntry {
        let id: String
        let idle: Int
        let deliveries: Int

        /// Nil for a value of another shape.
        init?(_ value: RedisValue) {
            let fields = value.elements
            guard fields.count >= 4, let id = fields[0].text, case .integer(let idle) = fields[2],
                case .integer(let deliveries) = fields[3]
            else { return nil }
            (self.id, self.idle, self.deliveries) = (id, idle, deliveries)
        }
    }

    /// Runs XPENDING's extended form (`arguments`): its entries, any of another shape left out.
    private func pendingEntries(_ arguments: [String], _ connection: RedisConnection) throws(RedisError)
        -> [PendingEntry]
    {
        try connection.run(arguments).elements.compactMap(PendingEntry.init)
    }

    /// Writes `entry`, this consumer's, to the dead-letter stream without reading it (the script copies its payload
    /// there), its reason saying so; whether it was written (false: another consumer's by then).
    private func deadLetterUnread(_ entry: PendingEntry, _ connection: RedisConnection) throws(RedisError) -> Bool {
        let reason = WorkerStateMachine.overdelivered(entry.deliveries) + " (dead-lettered unread)"
        return try write([.deadLetter(id: entry.id, reason: reason, deliveries: entry.deliveries)], connection)
            == [true]
    }

    /// Dead-letters, without reading them, the entries idle longer than `claimIdle` already delivered more than
    /// `maximumDeliveries` times, among the oldest `overdeliveredLook` pending (XPENDING's extended form): each is
    /// made this consumer's by its id alone (XCLAIM JUSTID: no payload sent, no delivery counted), then written to
    /// the dead-letter stream by the server (`deadLetterScript`, which copies its payload there). Returns how many.
    ///
    /// Why: the claim that would dead-letter such an entry sends its payload first; an entry too large to arrive
    /// within the reply timeout over the worker's link had every claim of it cut (`claimCut`), each counting a
    /// delivery, and stayed pending for good, a claim a `claimEvery` spent on it.
    func deadLetterOverdelivered(_ connection: RedisConnection) throws(RedisError) -> Int {
        let idle = String(settings.claimIdle.inMilliseconds)
        let pending = try pendingEntries(
            ["XPENDING", settings.stream, settings.group, "IDLE", idle, "-", "+", String(Self.overdeliveredLook)],
            connection)
        var deadLettered = 0
        for entry in pending where entry.deliveries > settings.maximumDeliveries {
            let claimed = try connection.run([
                "XCLAIM", settings.stream, settings.group, settings.consumer, idle, entry.id, "JUSTID",
            ])
            guard !claimed.elements.isEmpty else { continue }
            if try deadLetterUnread(entry, connection) { deadLettered += 1 }
        }
        return deadLettered
    }

    /// How many of the oldest pending entries `deadLetterOverdelivered` looks at each time: 16.
    static let overdeliveredLook = 16

    /// How often entry `id` was delivered (XPENDING), or nil when Redis does not say.
    private func deliveries(of id: String, _ connection: RedisConnection) throws(RedisError) -> Int? {
        try pendingEntries(["XPENDING", settings.stream, settings.group, id, id, "1"], connection).first?.deliveries
    }

    /// How often a claimed entry was delivered at least, when XPENDING does not say: read once, then claimed.
    static let leastClaimedDeliveries = 2

    /// Removes the other consumers of the group that have no pending entry and have been idle longer than
    /// `removeIdleConsumers` (workers killed, or gone without their clean exit), and says which.
    /// Redis refusing it (an ACL user without XINFO or XGROUP) is logged, not retried: the worker's own work does
    /// not need it.
    func removeIdleConsumers(_ connection: RedisConnection) throws(RedisError) {
        guard let age = settings.removeIdleConsumers else { return }
        let removed: [String]
        do throws(RedisError) {
            removed = try connection.run([
                "EVAL", StreamWorker.removeIdleConsumersScript, "1", settings.stream, settings.group,
                String(age.inMilliseconds), settings.consumer,
            ]).elements.compactMap(\.text)
        } catch  where error.kind == .reply {
            log("richpush worker: could not remove idle consumers: \(error.description)")
            return
        }
        if !removed.isEmpty {
            log(
                "richpush worker: removed consumers idle over \(age) without pending entries: "
                    + removed.joined(separator: ", "))
        }
    }

    /// At a clean exit, removes this consumer from the group unless entries are pending for it (removing it would
    /// lose them): one attempt (`runScript`), as the process is ending; another worker removes it later otherwise.
    func removeOwnConsumer(_ connection: RedisConnection) {
        do throws(RedisError) {
            let removed = try runScript(
                ["EVAL", StreamWorker.removeConsumerScript, "1", settings.stream, settings.group, settings.consumer]
                    .map { Array($0.utf8) }, on: connection)
            // Entries pending for it that this worker never saw: delivered to a read whose reply was lost (the
            // connection dropped at its timeout while Redis stalled). They wait for another consumer's claim.
            if removed == .integer(0) {
                log(
                    "richpush worker: consumer '\(settings.consumer)' kept in the group: entries are pending for it "
                        + "that this worker never received (a read whose reply was lost); another consumer claims "
                        + "them after --claim-idle (\(settings.claimIdle))")
            }
        } catch {
            log(
                "richpush worker: could not remove consumer '\(settings.consumer)' from the group: \(error.description)"
            )
        }
    }

    /// The writes and acknowledgements of a batch of results, or of one dead letter, each only while this
    /// consumer owns its entry; whether each was done.
    func write(_ batch: [WorkerStateMachine.Write], _ connection: RedisConnection) throws(RedisError) -> [Bool] {
        let reply: RedisValue
        if case .deadLetter(let id, let reason, let deliveries) = batch[0] {
            let arguments = [
                "EVAL", StreamWorker.deadLetterScript, "2", settings.stream, settings.deadLetter, settings.group,
                settings.consumer, id, reason, String(deliveries),
            ]
            reply = try runScript(arguments.map { Array($0.utf8) }, on: connection)
            return [reply == .integer(1)]
        }
        var arguments = [
            Array("EVAL".utf8), Array(StreamWorker.writeScript.utf8), Array("2".utf8), Array(settings.stream.utf8),
            Array(settings.output.utf8), Array(settings.group.utf8), Array(settings.consumer.utf8),
        ]
        for case .result(let id, let json) in batch {
            arguments.append(Array(id.utf8))
            arguments.append(json)
        }
        reply = try runScript(arguments, on: connection)
        return reply.elements.map { $0 == .integer(1) }
    }

    /// Runs one of the worker's scripts, and once more on a new connection when the server had closed this one (left
    /// idle: Redis's `timeout`, CLIENT KILL, a restart), most likely before the script came: each burst after a
    /// pause had failed its first write, and the drain its consumer's removal. Each script checks this consumer's
    /// ownership before it writes, so one that did run first is harmless again (its entries then count as dropped,
    /// their one output standing).
    private func runScript(_ arguments: [[UInt8]], on connection: RedisConnection) throws(RedisError) -> RedisValue {
        do throws(RedisError) {
            return try connection.run(bytes: arguments)
        } catch  where error.code == .closed || error.code == .io {
            return try connection.run(bytes: arguments)
        }
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
