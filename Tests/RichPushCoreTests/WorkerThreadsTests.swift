import RichPushCore
import RichPushTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Worker threads: named threads, first come first served, withdrawal and shutdown", .offPool)
struct WorkerThreadsTests {
    /// A gate work items wait at (on the pool's threads, never the test's) until the test opens it; bounded, so that
    /// a test that fails to open it cannot hang the suite.
    final class Gate: Sendable {
        private let open = LockedValue(false)

        func pass() {
            precondition(opens(within: .seconds(30)), "the gate stayed shut for 30 s")
        }

        /// Waits for the gate to open, at most `timeout`: whether it did.
        func opens(within timeout: Duration) -> Bool {
            open.wait(timeout: timeout) { $0 ? () : nil } != nil
        }

        func release() { open.update { $0 = true } }
    }

    /// What the work items reported, in the order they reported it.
    final class Log: Sendable {
        private let entries = LockedValue<[String]>([])
        func add(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    /// The calling thread's name, as the kernel has it.
    static func threadName() -> String {
        let descriptor = open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return "" }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        return String(decoding: buffer.prefix(max(0, count)), as: UTF8.self).filter { $0 != "\n" }
    }

    @Test("one thread runs its work in the order it was submitted")
    func order() async throws {
        let threads = WorkerThreads(name: "test-order")
        defer { threads.shutdown(.refuse) }
        let log = Log()
        for index in 0..<200 {
            threads.submit { turn in
                if case .run = turn { log.add("\(index)") }
            }
        }
        try await waitUntil("200 items to run") { log.all.count == 200 }
        #expect(log.all == (0..<200).map(String.init))
    }

    @Test("N threads run N items at once, no more, each on a thread named after the pool")
    func threadCount() async throws {
        let threads = WorkerThreads(name: "test-count", count: 3)
        let gate = Gate()
        let log = Log()
        for _ in 0..<4 {
            threads.submit { turn in
                guard case .run(let thread) = turn else { return }
                log.add("\(thread) \(Self.threadName())")
                gate.pass()
            }
        }
        try await waitUntil("three items to run") { threads.running == 3 }
        #expect(threads.waiting == 1)
        #expect(Set(log.all) == ["0 test-count-0", "1 test-count-1", "2 test-count-2"])
        gate.release()
        try await waitUntil("the fourth to run and all to end") { log.all.count == 4 && threads.running == 0 }
        #expect(threads.waiting == 0)
        threads.shutdownAndWait(.drain)
    }

    @Test("an item withdrawn before it starts is called withdrawn at once and never runs; a started one cannot be")
    func withdraw() async throws {
        let threads = WorkerThreads(name: "test-withdraw")
        defer { threads.shutdown(.refuse) }
        let gate = Gate()
        let log = Log()
        let blocker = try #require(threads.submit { _ in gate.pass() })
        var tickets: [WorkerThreads.Ticket] = []
        for name in ["a", "b", "c"] {
            tickets.append(try #require(threads.submit { turn in log.add("\(name) \(turn)") }))
        }
        try await waitUntil("the blocker to run") { threads.running == 1 }
        #expect(threads.withdraw(tickets[1]))
        #expect(log.all == ["b withdrawn"])
        #expect(threads.waiting == 2)
        #expect(!threads.withdraw(tickets[1]), "withdrawn twice")
        #expect(!threads.withdraw(blocker), "withdrew a running item")
        gate.release()
        try await waitUntil("a and c to run") { log.all.count == 3 }
        #expect(log.all == ["b withdrawn", "a run(thread: 0)", "c run(thread: 0)"])
        #expect(!threads.withdraw(tickets[0]), "withdrew a finished item")
    }

    @Test("a refusing shutdown drops what is queued at once and lets the running item finish; later work is dropped")
    func refuse() async throws {
        let threads = WorkerThreads(name: "test-refuse")
        let gate = Gate()
        let log = Log()
        threads.submit { turn in
            gate.pass()
            log.add("running \(turn)")
        }
        for name in ["a", "b"] { threads.submit { turn in log.add("\(name) \(turn)") } }
        try await waitUntil("the first item to run") { threads.running == 1 }
        threads.shutdown(.refuse)
        #expect(log.all == ["a dropped", "b dropped"])
        #expect(threads.submit { turn in log.add("late \(turn)") } == nil)
        #expect(log.all.last == "late dropped")
        gate.release()
        threads.shutdownAndWait(.refuse)
        #expect(log.all == ["a dropped", "b dropped", "late dropped", "running run(thread: 0)"])
    }

    @Test("a draining shutdown runs what is queued, then ends the threads")
    func drain() async throws {
        let (threads, gate, log) = (WorkerThreads(name: "test-drain", count: 2), Gate(), Log())
        for index in 0..<6 {
            threads.submit { turn in
                gate.pass()
                if case .run = turn { log.add("\(index)") }
            }
        }
        try await waitUntil("two items to run") { threads.running == 2 }
        threads.shutdown(.drain)
        #expect(threads.submit { turn in log.add("late \(turn)") } == nil)
        gate.release()
        threads.shutdownAndWait(.drain)
        #expect(log.all.first == "late dropped")
        #expect(Set(log.all.dropFirst()) == Set((0..<6).map(String.init)))
        #expect(threads.running == 0 && threads.waiting == 0)
    }

    @Test("a refusing shutdown calls the stop action of each item running, not of one it drops; a drain calls none")
    func stopRunning() async throws {
        let threads = WorkerThreads(name: "test-stop", count: 2)
        let (stopped, unstoppable) = (Gate(), Gate())
        let log = Log()
        // Blocks until its stop action is called: unstopped, it would run 30 s and say so.
        threads.submit(stop: stopped.release) { _ in
            log.add(stopped.opens(within: .seconds(30)) ? "a stopped" : "a ran 30 s unstopped")
        }
        // Submitted without one: a shutdown lets it run to its end.
        threads.submit { _ in
            unstoppable.pass()
            log.add("b ended")
        }
        threads.submit(stop: { log.add("c told to stop") }) { turn in log.add("c \(turn)") }
        try await waitUntil("two items to run") { threads.running == 2 }
        threads.shutdown(.drain)
        #expect(log.all.isEmpty && threads.waiting == 1, "\(log.all)")
        threads.shutdown(.refuse)
        try await waitUntil("a to be stopped") { log.all.count == 2 }
        unstoppable.release()
        threads.shutdownAndWait(.refuse)
        #expect(log.all == ["c dropped", "a stopped", "b ended"])
    }

    @Test("an item a thread takes as a refusing shutdown begins is dropped or told to stop, never left running")
    func stopRace() async throws {
        // Each round: the thread runs a first item, which raises `taking` as it returns; the thread then takes the
        // second, which blocks until its stop action is called. This thread spins on `taking` and shuts the pool
        // down a moment after it rose: 0 to 4,950 spins, swept over the rounds (denser near 0) across the thread's
        // return and its taking. Both outcomes must occur, or the race was not run (measured: about 9 % dropped).
        // At least 1,000 rounds, and up to 5,000 until both occurred: in a loaded full run, 1,000 rounds once saw
        // none dropped.
        var outcomes: [String: Int] = [:]
        for round in 0..<5000 {
            if round >= 1000, outcomes["stopped", default: 0] > 0, outcomes["dropped", default: 0] > 0 { break }
            let threads = WorkerThreads(name: "test-race")
            let taking = Atomic<Bool>(false)
            let (stopped, outcome) = (Gate(), LockedValue<String?>(nil))
            threads.submit { _ in taking.store(true, ordering: .releasing) }
            threads.submit(stop: stopped.release) { turn in
                guard case .run = turn else { return outcome.update { $0 = "\(turn)" } }
                outcome.update { $0 = stopped.opens(within: .seconds(10)) ? "stopped" : "ran 10 s unstopped" }
            }
            let end = ContinuousClock.now + .seconds(10)
            var spins = 0
            while !taking.load(ordering: .acquiring) {
                spins += 1
                if spins % 4096 == 0 { try #require(ContinuousClock.now < end, "the first item did not run in 10 s") }
            }
            for delay in 0..<(round % 100 * (round % 100) / 2) { blackHole(delay) }
            threads.shutdownAndWait(.refuse)
            let ended = try #require(outcome.withLock { $0 }, "round \(round): the second item was never called")
            outcomes[ended, default: 0] += 1
            guard ended == "stopped" || ended == "dropped" else {
                Issue.record("round \(round): the second item \(ended); so far \(outcomes)")
                return
            }
        }
        #expect(outcomes["stopped", default: 0] > 0 && outcomes["dropped", default: 0] > 0, "\(outcomes)")
    }
}

/// Keeps a spin loop's iterations from being optimized away.
@inline(never)
private func blackHole(_ value: Int) {}
