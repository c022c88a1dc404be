import RichPushCore
import RichPushTestSupport
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
            let opened = open.wait(timeout: .seconds(30)) { $0 ? () : nil }
            precondition(opened != nil, "the gate stayed shut for 30 s")
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
}
