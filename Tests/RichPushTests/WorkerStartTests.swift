import Foundation
import Testing

@testable import RichPush
@testable import RichPushWorker

/// A loopback TCP socket that listens and never answers: a Redis that is up but stuck. A client's connection is
/// made (by the kernel, in the backlog), and its command waits for a reply that never comes. The kernel picks the
/// port, and it is the test's until the listener is dropped.
final class SilentListener: @unchecked Sendable {
    private let descriptor: Int32
    let port: Int
    private let accepted = LockedValue<[Int32]>([])

    init() throws {
        (descriptor, port) = try loopbackSocket()
        guard listen(descriptor, 16) == 0, fcntl(descriptor, F_SETFL, O_NONBLOCK) == 0 else {
            close(descriptor)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EINVAL)
        }
    }

    /// Takes the connections made so far (holding them open, unanswered); how many there have been.
    func connections() -> Int {
        accepted.withLock { accepted in
            while case let connection = accept(descriptor, nil, nil), connection >= 0 { accepted.append(connection) }
            return accepted.count
        }
    }

    deinit {
        accepted.withLock { accepted in for connection in accepted { close(connection) } }
        close(descriptor)
    }
}

/// `richpush worker`'s start-up: checking or making the group while Redis is away, stuck, or not ready yet.
@Suite("Worker: the start-up")
struct WorkerStartTests {
    /// What the Redis a worker starts against does.
    enum Unanswering: String, CaseIterable, Sendable {
        /// Nothing listens: each attempt is refused at once, and the worker waits its backoff between them.
        case refused
        /// It listens and never answers: each attempt blocks until the 5 s command timeout.
        case silent
    }

    static func settings(_ redis: RedisAddress) -> StreamWorker.Settings {
        StreamWorker.Settings(
            redis: redis, stream: "in", group: "g", output: "out", consumer: "a", deadLetter: "in:dead")
    }

    @Test(
        """
        while Redis does not answer, the start-up holds no thread of the executor run() is called on, and a shutdown \
        ends it at once, having read nothing
        """,
        arguments: Unanswering.allCases)
    func startHoldsNoThread(redis: Unanswering) async throws {
        let refusing = try RefusingPort()
        let listener = try SilentListener()
        let port = redis == .refused ? refusing.port : listener.port
        let address = try RedisAddress(parsing: "redis://127.0.0.1:\(port)")
        let lines = LockedValue<[String]>([])
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let worker = StreamWorker(settings: Self.settings(address), enricher: enricher) { line in
                lines.withLock { $0.append(line) }
            }
            // One thread of its own stands for the cooperative pool (two threads on this machine, shared by every
            // test): a start-up that blocks the thread it is called on holds it, and nothing else runs there.
            let executor = TestThreadExecutor()
            defer { executor.finish() }
            // Stopped whatever happens, so that a start-up that holds the thread lets it go when the test ends.
            defer { worker.stop() }
            let running = Task(executorPreference: executor) { try await worker.run() }
            // The event that shows the start-up is under way: an attempt refused (logged), or a connection made.
            try await waitUntil("the start-up's first attempt") {
                switch redis {
                case .refused: lines.withLock { $0.contains { $0.contains("retrying in") } }
                case .silent: listener.connections() > 0
                }
            }
            let ran = LockedValue(false)
            Task(executorPreference: executor) { ran.withLock { $0 = true } }
            // Before, the start-up's loop ran on that thread until Redis answered: the job never ran.
            try await waitUntil("a job beside the start-up on its executor's thread") { ran.withLock { $0 } }
            worker.stop()
            // At once: no wait for the attempt under way (the silent server's 5 s timeout).
            try await running.value
            #expect(worker.ending == .drained)
            #expect(worker.inFlight == 0)
            #expect(lines.withLock { $0.contains("richpush worker: stopped during the start-up; nothing was read") })
        }
    }

    @Test("SIGTERM while Redis does not answer yet: the process exits 0 at once, having read nothing")
    func signalDuringStart() async throws {
        let bed = try TestBed()
        let refusing = try RefusingPort()
        let worker = try WorkerProcess(
            [
                "--redis", "redis://127.0.0.1:\(refusing.port)", "--stream", "in", "--group", "g", "--output-stream",
                "out",
            ]
                + bed.cliOptions)
        try await waitUntil("an attempt refused", within: .seconds(20)) { worker.stderr.contains("retrying in") }
        worker.signal(SIGTERM)
        // Before, the start-up gave up with the last connection error: status 70.
        #expect(try await worker.waitForExit(within: .seconds(20)) == 0)
        #expect(worker.stderr.contains("stopped during the start-up; nothing was read"))
    }
}
