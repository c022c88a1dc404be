import Testing

@testable import RichPushWorker

/// `WorkerStateMachine` driven as the worker's reader and writer drive it, without Redis: each decision that
/// matters, checked against the event that leads to it.
@Suite("Worker: the state machine's decisions, without Redis")
struct WorkerStateMachineTests {
    static let start = ContinuousClock.now

    /// A machine claiming every 30 s (`--claim-idle 60`), checking its connection every second; past its first look
    /// for entries pending for it that it never received (none found) unless `looked` is false.
    static func machine(concurrency: Int = 4, maximumDeliveries: Int = 3, looked: Bool = true) -> WorkerStateMachine {
        var settings = StreamWorker.Settings(
            redis: try! RedisAddress(parsing: "redis://localhost"), stream: "in", group: "g", output: "out",
            consumer: "c", deadLetter: "in:dead")
        settings.concurrency = concurrency
        settings.maximumDeliveries = maximumDeliveries
        settings.claimIdle = .seconds(60)
        var machine = WorkerStateMachine(settings: settings, connectionCheck: .seconds(1), now: start)
        if looked {
            let first = machine.nextRead(now: start)
            #expect(first == .recover(count: concurrency, known: []), "the first look is for entries never received")
            machine.recovered(complete: true)
        }
        return machine
    }

    static func result(_ id: String) -> WorkerStateMachine.Write { .result(id: id, json: Array(id.utf8)) }

    @Test("backpressure: the reader asks for no more than the free slots; full, it checks the connection and waits")
    func backpressure() {
        var machine = Self.machine(concurrency: 3)
        let now = Self.start
        // The first look claims (idle entries first), for every slot.
        let read1 = machine.nextRead(now: now)
        #expect(read1 == .claim(count: 3))
        machine.claimed(now: now)
        machine.taken(["a", "b"])
        let read2 = machine.nextRead(now: now)
        #expect(read2 == .read(count: 1))
        machine.taken(["c"])
        // Full: nothing is read; the connection was checked by the read just asked for, so it waits for room.
        let read3 = machine.nextRead(now: now)
        #expect(read3 == .waitForRoom(until: now + .seconds(1)))
        let read4 = machine.nextRead(now: now + .seconds(1))
        #expect(read4 == .checkConnection)
        machine.connectionChecked(now: now + .seconds(1))
        let read5 = machine.nextRead(now: now + .seconds(1))
        #expect(read5 == .waitForRoom(until: now + .seconds(2)))
        // Two written: two slots free, and the reader asks for exactly two.
        for id in ["a", "b"] { _ = machine.queue(Self.result(id), now: now) }
        let written = machine.written(2, acknowledged: [true, true], taken: now)
        #expect(written == .init(results: 2))
        #expect(machine.inFlight == 1)
        let read6 = machine.nextRead(now: now + .seconds(2))
        #expect(read6 == .read(count: 2))
        // Claims come back every claimEvery, never in between.
        let read7 = machine.nextRead(now: now + .seconds(29))
        #expect(read7 == .read(count: 2))
        let read8 = machine.nextRead(now: now + .seconds(30))
        #expect(read8 == .claim(count: 2))
    }

    @Test(
        """
        a claim whose reply was too slow to read: reads go on, and the next claim, claimEvery later, asks for half as \
        many (down to one); one read whole asks for every free slot again
        """)
    func claimCut() {
        var machine = Self.machine(concurrency: 8)
        let now = Self.start
        #expect(machine.nextRead(now: now) == .claim(count: 8))
        machine.claimCut(count: 8, now: now)
        #expect(machine.nextRead(now: now) == .read(count: 8), "reads go on")
        #expect(machine.nextRead(now: now + .seconds(29)) == .read(count: 8))
        #expect(machine.nextRead(now: now + .seconds(30)) == .claim(count: 4))
        machine.claimCut(count: 4, now: now + .seconds(30))
        machine.claimCut(count: 2, now: now + .seconds(30))
        machine.claimCut(count: 1, now: now + .seconds(30))
        #expect(machine.nextRead(now: now + .seconds(60)) == .claim(count: 1))
        machine.claimed(now: now + .seconds(60))
        #expect(machine.nextRead(now: now + .seconds(90)) == .claim(count: 8))
    }

    @Test(
        """
        entries pending for this consumer that the worker never received are looked for at the start, after a reader's \
        command failed, and once at the drain (not after a failure), leaving out the ids in flight and for claimEvery \
        those whose claim by a look was cut; never while every slot is taken
        """)
    func unseenEntries() {
        var machine = Self.machine(concurrency: 4, looked: false)
        let now = Self.start
        #expect(machine.nextRead(now: now) == .recover(count: 4, known: []), "first, before the claim")
        // More than the room: taken, and the next look goes on.
        machine.taken(["x", "y"])
        machine.recovered(complete: false)
        #expect(machine.nextRead(now: now) == .recover(count: 2, known: ["x", "y"]))
        machine.recovered(complete: true)
        #expect(machine.nextRead(now: now) == .claim(count: 2))
        machine.claimed(now: now)
        #expect(machine.nextRead(now: now) == .read(count: 2))
        // An id taken twice (claimed back while in flight) is in flight until written twice.
        machine.taken(["y"])
        machine.redisFailed()
        #expect(machine.nextRead(now: now) == .recover(count: 1, known: ["x", "y"]), "after a failure")
        machine.recovered(complete: true)
        _ = machine.queue(Self.result("y"), now: now)
        _ = machine.written(1, acknowledged: [true], taken: now)
        machine.redisFailed()
        #expect(machine.nextRead(now: now) == .recover(count: 2, known: ["x", "y"]))
        _ = machine.queue(Self.result("y"), now: now)
        _ = machine.written(1, acknowledged: [false], taken: now)
        #expect(machine.nextRead(now: now) == .recover(count: 3, known: ["x"]), "written or dropped, it leaves")
        // Saturated, it waits for room first.
        machine.taken(["a", "b", "c"])
        #expect(machine.nextRead(now: now) == .waitForRoom(until: now + .seconds(1)))
        _ = machine.queue(Self.result("a"), now: now)
        _ = machine.written(1, acknowledged: [true], taken: now)
        #expect(machine.nextRead(now: now) == .recover(count: 1, known: ["x", "b", "c"]))
        machine.recovered(complete: true)
        // A look's claim cut: that entry is left out for claimEvery (30 s), and reading goes on.
        machine.redisFailed()
        #expect(machine.nextRead(now: now) == .recover(count: 1, known: ["x", "b", "c"]))
        machine.lookCut(id: "big", now: now)
        machine.redisFailed()
        #expect(machine.nextRead(now: now) == .recover(count: 1, known: ["x", "b", "c", "big"]))
        machine.recovered(complete: true)
        #expect(machine.nextRead(now: now + .seconds(1)) == .read(count: 1), "reading goes on")
        machine.redisFailed()
        #expect(machine.nextRead(now: now + .seconds(29)) == .recover(count: 1, known: ["x", "b", "c", "big"]))
        #expect(machine.nextRead(now: now + .seconds(30)) == .recover(count: 1, known: ["x", "b", "c"]))
        machine.recovered(complete: true)
        // The drain: one look, for as many as the concurrency whatever the room, then the reader stops.
        machine.taken(["d"])
        machine.shutdownRequested()
        #expect(machine.nextRead(now: now) == .recover(count: 4, known: ["x", "b", "c", "d"]))
        machine.redisFailed()
        #expect(machine.nextRead(now: now) == .stop, "one look only, even failed")
        // None once the drain's time is over, nor when the reader's last command failed (Redis stalled or away).
        var late = Self.machine()
        late.shutdownRequested()
        late.drainDeadlinePassed()
        #expect(late.nextRead(now: now) == .stop)
        var failing = Self.machine()
        failing.redisFailed()
        failing.shutdownRequested()
        #expect(failing.nextRead(now: now) == .stop)
    }

    @Test("a read answered empty sooner than its block paces the next to the block's end; any other read does not")
    func pacedReads() {
        var machine = Self.machine()
        let now = Self.start
        let step1 = machine.nextRead(now: now) == .claim(count: 4)
        #expect(step1)
        machine.claimed(now: now)
        // Empty at once (a server that does not block): the next read waits for the second's end.
        let step2 = machine.nextRead(now: now) == .read(count: 4)
        #expect(step2)
        let step3 = machine.read(0, asked: now, now: now + .milliseconds(5))
        #expect(step3)
        let step4 = machine.nextRead(now: now + .milliseconds(6)) == .pace(until: now + .seconds(1))
        #expect(step4)
        let step5 = machine.nextRead(now: now + .milliseconds(999)) == .pace(until: now + .seconds(1))
        #expect(step5)
        let step6 = machine.nextRead(now: now + .seconds(1)) == .read(count: 4)
        #expect(step6)
        // Empty after the block (Redis blocking as asked), or entries at once: the next read at once.
        let later = now + .seconds(1)
        let step7 = machine.read(0, asked: later, now: later + .milliseconds(950))
        #expect(!step7)
        let step8 = machine.nextRead(now: later + .milliseconds(950)) == .read(count: 4)
        #expect(step8)
        let step9 = machine.read(2, asked: later, now: later + .milliseconds(1))
        #expect(!step9)
        let step10 = machine.nextRead(now: later + .milliseconds(2)) == .read(count: 4)
        #expect(step10)
        // A claim due is not held back by the pace, and stopping ends it.
        let step11 = machine.read(0, asked: now + .seconds(29), now: now + .seconds(29))
        #expect(step11)
        let step12 = machine.nextRead(now: now + .seconds(30)) == .claim(count: 4)
        #expect(step12)
        machine.shutdownRequested()
        let step13 = machine.nextRead(now: now + .seconds(30))
        #expect(step13 == .recover(count: 4, known: []), "one last look for entries never received")
        let step14 = machine.nextRead(now: now + .seconds(30))
        #expect(step14 == .stop)
    }

    @Test("the graceful shutdown stops reading; the writer finishes, drained, once every entry taken is written")
    func drained() {
        var machine = Self.machine()
        let now = Self.start
        machine.taken(["a", "c"])
        _ = machine.queue(Self.result("a"), now: now)
        machine.shutdownRequested()
        let read1 = machine.nextRead(now: now)
        #expect(read1 == .recover(count: 4, known: ["a", "c"]), "one last look, whatever the room")
        #expect(machine.nextRead(now: now) == .stop)
        #expect(!machine.isReady)
        // Entries read during the read that raced the shutdown are still counted, and still written.
        machine.taken(["b"])
        _ = machine.queue(Self.result("b"), now: now)
        #expect(machine.nextWrite(now: now + .milliseconds(5)) == .write([Self.result("a"), Self.result("b")]))
        _ = machine.written(2, acknowledged: [true, true], taken: now)
        machine.readerHasStopped()
        // One entry is still in process: the writer waits for it, it does not finish.
        #expect(machine.nextWrite(now: now) == .wait(until: nil))
        _ = machine.queue(Self.result("c"), now: now)
        #expect(machine.nextWrite(now: now) == .write([Self.result("c")]), "the last in flight fills the batch")
        _ = machine.written(1, acknowledged: [true], taken: now)
        #expect(machine.nextWrite(now: now) == .finish(drained: true))
        #expect(!machine.isFinished)
        machine.writerHasStopped()
        #expect(machine.isFinished)
        #expect(machine.ending == .drained)
    }

    @Test("the drain ends at its deadline: nothing more is written, and the ending counts what is left")
    func drainDeadline() {
        var machine = Self.machine()
        let now = Self.start
        machine.taken(["a", "b", "c"])
        #expect(machine.inFlight == 3)
        _ = machine.queue(Self.result("a"), now: now)
        machine.shutdownRequested()
        machine.writeFailed("redis down")
        #expect(machine.nextWrite(now: now + .seconds(1)) == .write([Self.result("a")]), "a failed write is kept")
        machine.drainDeadlinePassed()
        #expect(machine.nextWrite(now: now + .seconds(1)) == .finish(drained: false))
        let read1 = machine.nextRead(now: now)
        #expect(read1 == .stop)
        // `run` returns at once, with the reader and the writer still busy.
        #expect(machine.isFinished)
        #expect(machine.ending == .timedOut(unwritten: 3, computed: 1, failure: "redis down"))
    }

    @Test("lost ownership drops the write: not written again, its slot freed, counted as dropped")
    func lostOwnership() {
        var machine = Self.machine(concurrency: 2)
        let now = Self.start
        machine.taken(["a", "b"])
        _ = machine.queue(Self.result("a"), now: now)
        _ = machine.queue(Self.result("b"), now: now)
        #expect(machine.nextWrite(now: now) == .write([Self.result("a"), Self.result("b")]))
        let written = machine.written(2, acknowledged: [true, false], taken: now)
        #expect(written == .init(results: 1, dropped: 1))
        #expect(machine.inFlight == 0)
        #expect(machine.writes.isEmpty)
        #expect(machine.nextWrite(now: now + .seconds(1)) == .wait(until: nil))
    }

    @Test("an entry delivered more than the maximum is dead-lettered, alone and at once; results batch before it")
    func deadLetters() {
        var machine = Self.machine(concurrency: 64, maximumDeliveries: 3)
        let now = Self.start
        #expect(machine.disposition(deliveries: 3) == .process)
        let reason = "delivered 4 times without a result"
        #expect(machine.disposition(deliveries: 4) == .deadLetter(reason: reason))
        machine.taken(["a", "b", "d"])
        let letter = WorkerStateMachine.Write.deadLetter(id: "d", reason: reason, deliveries: 4)
        let wakes1 = machine.queue(Self.result("a"), now: now)
        #expect(wakes1, "a first result wakes the writer")
        let wakes2 = machine.queue(Self.result("b"), now: now)
        #expect(!wakes2, "a second one does not: the linger runs")
        // Not due yet: the writer waits for the linger of the oldest.
        #expect(machine.nextWrite(now: now) == .wait(until: now + .milliseconds(2)))
        let wakes3 = machine.queue(letter, now: now)
        #expect(wakes3, "a dead letter wakes the writer")
        // All in flight are queued: the batch is filled; the dead letter is not part of it.
        #expect(machine.nextWrite(now: now) == .write([Self.result("a"), Self.result("b")]))
        _ = machine.written(2, acknowledged: [true, true], taken: now)
        #expect(machine.nextWrite(now: now) == .write([letter]))
        let outcome1 = machine.written(1, acknowledged: [true], taken: now)
        #expect(outcome1 == .init(deadLettered: 1))
    }

    @Test("readiness: Redis answering and the last write not failed, until the shutdown")
    func readiness() {
        var machine = Self.machine(looked: false)
        #expect(!machine.isReady, "not before Redis answered")
        machine.redisAnswered()
        #expect(machine.isReady)
        machine.redisFailed()
        #expect(!machine.isReady)
        machine.redisAnswered()
        machine.taken(["a"])
        _ = machine.queue(Self.result("a"), now: Self.start)
        machine.writeFailed("down")
        #expect(!machine.isReady)
        _ = machine.written(1, acknowledged: [true], taken: Self.start)
        #expect(machine.isReady)
        machine.shutdownRequested()
        #expect(!machine.isReady)
    }
}
