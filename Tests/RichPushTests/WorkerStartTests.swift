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

/// `richpush worker`'s start-up: checking or making the group while Redis is away, stuck, or not ready yet. Off the
/// pool: its bodies start Redis servers and wait on their sockets.
@Suite("Worker: the start-up", .offPool)
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

    /// A state a Redis server leaves by itself, made on a real one, and the test's way to end it.
    enum NotReady: String, CaseIterable, Sendable {
        /// Loading its data set after a restart, each key slowed down (`key-load-delay`): LOADING, until the delay
        /// is set to 0 and the load ends.
        case loading
        /// A script looping past `busy-reply-threshold`: BUSY, until SCRIPT KILL.
        case busy
        /// A replica: READONLY to XGROUP CREATE, until REPLICAOF NO ONE (a failover).
        case readOnly
        /// A replica that serves no stale data, its link to its primary down: MASTERDOWN, until REPLICAOF NO ONE.
        case masterDown

        /// The code Redis starts its answer with.
        var code: String {
            switch self {
            case .loading: "LOADING"
            case .busy: "BUSY"
            case .readOnly: "READONLY"
            case .masterDown: "MASTERDOWN"
            }
        }
    }

    /// The code of a command's error reply; nil when it succeeds or the connection fails.
    static func code(_ redis: RedisServer, _ arguments: [String]) -> RedisError.Code? {
        do {
            try redis.client().run(arguments)
            return nil
        } catch {
            return error.connection ? nil : error.code
        }
    }

    @Test(
        """
        at the start, a server not ready yet (LOADING, BUSY, READONLY, MASTERDOWN) is waited out with the backoff, \
        as a connection refused is; once it is ready, the worker makes the group and works
        """,
        arguments: NotReady.allCases)
    func notReadyAtStart(state: NotReady) async throws {
        let bed = try TestBed()
        // The replicas' primary requires a password their link does not give: the link never comes up.
        let primary = try RedisServer(password: "for-the-test-only")
        let replica = ["--replicaof", "127.0.0.1", String(primary.port)]
        let redis: RedisServer
        let end: [String]
        switch state {
        case .loading:
            redis = try RedisServer(
                arguments: ["--key-load-delay", "10000", "--loading-process-events-interval-bytes", "1024"])
            // 10,000 keys of 100 bytes, saved, then loaded again at 10 ms a key: 100 s of LOADING unless ended (the
            // server answers between keys, every 1 KiB of the file).
            try redis.client().run([
                "EVAL", "for i = 1, 10000 do redis.call('SET', 'k' .. i, string.rep('v', 100)) end", "0",
            ])
            try redis.client().run(["SAVE"])
            redis.stop()
            try redis.start(untilReady: false)
            end = ["CONFIG", "SET", "key-load-delay", "0"]
        case .busy:
            redis = try RedisServer(arguments: ["--busy-reply-threshold", "100"])
            // A script that loops until killed, from a connection of its own (its client gives up at its 5 s timeout;
            // the script goes on).
            Thread { _ = try? redis.client().run(["EVAL", "while true do end", "0"]) }.start()
            try await waitUntil("the server to answer BUSY") { Self.code(redis, ["XLEN", "in"]) == .busy }
            end = ["SCRIPT", "KILL"]
        case .readOnly:
            redis = try RedisServer(arguments: replica)
            end = ["REPLICAOF", "NO", "ONE"]
        case .masterDown:
            redis = try RedisServer(
                arguments: replica + ["--replica-serve-stale-data", "no", "--replica-read-only", "no"],
                untilReady: false)
            end = ["REPLICAOF", "NO", "ONE"]
        }
        let worker = try WorkerProcess(
            ["--redis", redis.url, "--stream", "in", "--group", "g", "--output-stream", "out", "--create-group"]
                + bed.cliOptions)
        func waited() -> Bool {
            worker.stderr.split(separator: "\n").contains {
                $0.hasPrefix("richpush worker: \(state.code) ") && $0.contains("; retrying in ")
            }
        }
        try await waitUntil("the worker to wait out \(state.code)", within: .seconds(30)) {
            waited() || !worker.process.isRunning
        }
        // Before, the worker exited 70 at the first such answer.
        try #require(worker.process.isRunning, "the worker exited: \(worker.stderr)")
        try redis.client().run(end)
        try await waitUntil("the server to serve", within: .seconds(30)) {
            (try? redis.client().run(["PING"])) == .status("PONG")
        }
        _ = try redis.add("in", [("payload", WorkerTests.payload(bed.url("/media/photo.jpg")))])
        try await waitUntil("the result", within: .seconds(30)) { try redis.entries("out").count == 1 }
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
    }
}
