import FixtureOrigin
import Foundation
import Testing

@testable import RichPush
@testable import RichPushWorker

/// A `redis-server` of the test's own on a loopback port, in a directory of its own (AOF on when asked), with a unix
/// socket there too.
///
/// redis-server cannot be asked to bind port 0 and say which it got, so its port is one the kernel said was free a
/// moment before, which another process may take first: then redis-server exits ("Address already in use"), and
/// the start is tried again on another port, up to `portAttempts` times. Readiness is asked through the unix socket,
/// which is this server's alone (a PING to the TCP port could be answered by another test's server holding it);
/// redis-server binds its TCP port before its unix socket, so a server that answers there holds its port.
final class RedisServer: @unchecked Sendable {
    /// The TCP port, fixed by the first start (a restart keeps it, as a worker connected to it expects).
    private(set) var port = 0
    let directory: String
    /// The default user's password (`requirepass`), if any: the test's own connections give it.
    let password: String?
    private let appendOnly: Bool
    private let extraArguments: [String]
    private var process: ChildProcess?

    /// How many ports the first start tries. Each attempt fails only when another process took the port in the
    /// moment between `freePort()` and redis-server's bind; five in a row is something else, and reported.
    static let portAttempts = 5

    /// A port that was taken when redis-server tried to bind it.
    struct PortTaken: Error, CustomStringConvertible {
        let port: Int
        var description: String { "redis-server could not bind port \(port): it was taken" }
    }

    /// `arguments` are more configuration lines (`--user alice on >secret ~* &* +@all`); `untilReady` as `start`'s.
    /// `ports` are tried first, before free ones (for the tests of the start's own retry).
    init(
        appendOnly: Bool = false, password: String? = nil, arguments: [String] = [], untilReady: Bool = true,
        ports: [Int] = []
    ) throws {
        directory = NSTemporaryDirectory() + "richpush-redis-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.appendOnly = appendOnly
        self.password = password
        extraArguments = (password.map { ["--requirepass", $0] } ?? []) + arguments
        var taken: [Int] = []
        for attempt in 0..<Self.portAttempts {
            port = attempt < ports.count ? ports[attempt] : try freePort()
            do {
                try start(untilReady: untilReady)
                return
            } catch let error as PortTaken {
                taken.append(error.port)
            }
        }
        throw ServeFailure("redis-server found each of the ports \(taken) taken")
    }

    /// Starts (or restarts, on the same port) the server and waits, bounded, until it answers: with `untilReady`,
    /// until it serves (PONG), else until it answers anything (LOADING while it loads its data, MASTERDOWN as a
    /// replica cut from its primary).
    /// - Throws: `PortTaken` when its port was taken (it exited saying so), or why it did not answer.
    func start(untilReady: Bool = true) throws {
        let log = directory + "/redis.log"
        let process = ChildProcess(
            "/usr/bin/redis-server",
            [
                "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--dir", directory,
                "--appendonly", appendOnly ? "yes" : "no", "--appendfsync", "always", "--unixsocket", socketPath,
                "--unixsocketperm", "700", "--logfile", log,
            ] + extraArguments)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        // This start's lines only: the log is appended to across restarts.
        process.logFile = log
        try process.run()
        self.process = process
        do {
            try process.waitUntilReady("redis-server on port \(port) to answer", within: .seconds(20)) {
                do {
                    return try client().run(["PING"]) == .status("PONG")
                } catch let error as RedisError where !untilReady && !error.connection {
                    return true
                } catch {
                    return false
                }
            }
        } catch let failure as ChildProcess.Failure {
            if case .exited = failure.reason, failure.log.contains("Address already in use") {
                throw PortTaken(port: port)
            }
            throw failure
        }
    }

    /// Stops the server with SHUTDOWN (with AOF and `appendfsync always`, every write is kept) and waits for it;
    /// SIGKILL after 10 s.
    func stop() {
        guard let process, process.isRunning else { return }
        _ = try? client().run(["SHUTDOWN", "NOSAVE"])
        process.stop(nil, grace: .seconds(10))
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    var url: String { "redis://127.0.0.1:\(port)" }

    /// The server's unix socket, in its directory.
    var socketPath: String { directory + "/redis.sock" }

    /// A new connection of the test's own, through the unix socket: always this server's.
    func client() -> RedisConnection {
        var address = try! RedisAddress(parsing: "unix://" + socketPath)
        address.password = password.map { Array($0.utf8) }
        return RedisConnection(address, timeout: .seconds(5))
    }

    /// `XADD stream * field value ...`; the new id.
    func add(_ stream: String, _ fields: [(String, String)]) throws -> String {
        try client().run(["XADD", stream, "*"] + fields.flatMap { [$0.0, $0.1] }).text ?? ""
    }

    /// Every entry of a stream: id and fields.
    func entries(_ stream: String) throws -> [(id: String, fields: [String: String])] {
        try client().run(["XRANGE", stream, "-", "+"]).elements.map { entry in
            let flat = entry.elements.dropFirst().first?.elements.compactMap(\.text) ?? []
            var fields: [String: String] = [:]
            for index in stride(from: 0, to: flat.count - 1, by: 2) { fields[flat[index]] = flat[index + 1] }
            return (entry.elements.first?.text ?? "", fields)
        }
    }

    /// The number of entries pending in a group; 0 while the group does not exist yet.
    func pending(_ stream: String, _ group: String) throws -> Int {
        do {
            if case .integer(let count)? = try client().run(["XPENDING", stream, group]).elements.first {
                return count
            }
            return -1
        } catch  where error.code == .noGroup {
            return 0
        }
    }

    /// `XINFO CONSUMERS`: each consumer's pending entries and idle time (ms), by name.
    func consumers(_ stream: String, _ group: String) throws -> [String: (pending: Int, idle: Int)] {
        var consumers: [String: (pending: Int, idle: Int)] = [:]
        for consumer in try client().run(["XINFO", "CONSUMERS", stream, group]).elements {
            var name = ""
            var numbers: [String: Int] = [:]
            for pair in stride(from: 0, to: consumer.elements.count - 1, by: 2) {
                let key = consumer.elements[pair].text ?? ""
                switch consumer.elements[pair + 1] {
                case .integer(let value): numbers[key] = value
                case let value: if key == "name" { name = value.text ?? "" }
                }
            }
            consumers[name] = (numbers["pending"] ?? -1, numbers["idle"] ?? -1)
        }
        return consumers
    }
}

/// A `richpush worker` process; its standard error goes to a file of its own (`stderr` reads it).
final class WorkerProcess: @unchecked Sendable {
    let process: ChildProcess
    private let errorFile = NSTemporaryDirectory() + "richpush-worker-stderr-" + UUID().uuidString

    /// `environment`: variables added to the test's own.
    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        process = ChildProcess(CLI.binary, ["worker"] + arguments, environment: environment)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try ChildProcess.outputFile(errorFile)
        process.standardInput = FileHandle.nullDevice
        process.logFile = errorFile
        try process.run()
    }

    /// What the worker wrote to standard error so far.
    var stderr: String { (try? String(contentsOfFile: errorFile, encoding: .utf8)) ?? "" }

    func signal(_ number: Int32) { process.signal(number) }

    /// The port its `--metrics-listen` listener bound (asked for port 0, so that no other process can take it
    /// first), from its announcement on standard error: `{"listening":"127.0.0.1:PORT"}`.
    func metricsPort() async throws -> Int {
        try await offPool { [self] in
            var port: Int? = nil
            try process.waitUntilReady("the worker to announce its listener") {
                port =
                    stderr.split(separator: "\n").lazy.compactMap { line -> Int? in
                        guard line.hasPrefix(#"{"listening":""#) else { return nil }
                        return line.dropLast(2).split(separator: ":").last.flatMap { Int($0) }
                    }.first
                return port != nil
            }
            return try #require(port)
        }
    }

    func waitForExit(within limit: Duration) async throws -> Int32 {
        try await process.exitStatus("the worker", within: limit)
    }

    deinit {
        process.stop(grace: process.stopGrace)
        try? FileManager.default.removeItem(atPath: errorFile)
    }
}

@Suite(.serialized)
struct WorkerTests {
    static func payload(_ url: String) -> String {
        #"{"aps":{"alert":"hi","mutable-content":1},"adb_media":"\#(url)"}"#
    }

    /// A worker's arguments for `redis`'s stream `in`, group `g`, output `out`; `url` in place of the server's own
    /// (a proxy before it).
    func arguments(_ bed: TestBed, _ redis: RedisServer, _ extra: [String] = [], url: String? = nil) -> [String] {
        ["--redis", url ?? redis.url, "--stream", "in", "--group", "g", "--output-stream", "out"] + bed.cliOptions
            + extra
    }

    /// Adds an entry of `payload` to the stream `in`, of a new group `g`, and delivers it to the consumer `gone`
    /// (who never answers): it is pending, delivered once. Returns its id.
    func pendingForGone(_ redis: RedisServer, payload: String) throws -> String {
        let admin = redis.client()
        try admin.run(["XGROUP", "CREATE", "in", "g", "$", "MKSTREAM"])
        let id = try redis.add("in", [("payload", payload)])
        _ = try admin.run(["XREADGROUP", "GROUP", "g", "gone", "COUNT", "1", "STREAMS", "in", ">"])
        return id
    }

    /// The one entry of the dead-letter stream `in:dead`, once there (within `limit`); `context` explains a failure.
    func deadLetter(
        _ redis: RedisServer, within limit: Duration, _ context: @autoclosure () -> String = "",
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (id: String, fields: [String: String]) {
        try await waitUntil("the dead letter", within: limit, sourceLocation: sourceLocation) {
            try redis.entries("in:dead").count == 1
        }
        return try #require(try redis.entries("in:dead").first, "\(context())", sourceLocation: sourceLocation)
    }

    /// The worker's /metrics on `port` (`--metrics-listen`); empty while it does not answer.
    static func metrics(_ port: Int) -> String {
        (try? HTTPConnection(port: port).exchange("GET", "/metrics", within: .seconds(5)).text) ?? ""
    }

    @Test("one result entry per input entry, each acknowledged; a missing or bad payload is an invalid result")
    func basic() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        let good = try redis.add("in", [("payload", Self.payload(bed.url("/media/photo.jpg")))])
        let missing = try redis.add("in", [("other", "x")])
        let bad = try redis.add("in", [("payload", "not json")])
        let worker = try WorkerProcess(arguments(bed, redis, ["--create-group", "--metrics-listen", "127.0.0.1:0"]))
        let metricsPort = try await worker.metricsPort()
        try await waitUntil("three results") { try redis.entries("out").count == 3 }
        try await waitUntil("the metrics to count three written results") {
            Self.metrics(metricsPort).contains("richpush_worker_entries_total{result=\"written\"} 3")
        }
        let health = try HTTPConnection(port: metricsPort)
        #expect(try health.exchange("GET", "/healthz").status == 200)
        #expect(try health.exchange("GET", "/readyz").status == 200)
        let metrics = try health.exchange("GET", "/metrics").text
        #expect(metrics.contains("richpush_payloads_total{outcome=\"complete\"} 1"))
        #expect(metrics.contains("richpush_payloads_total{outcome=\"invalid\"} 2"))
        // Results are written as they complete: by source, not in order.
        var results: [String: [String: Any]] = [:]
        for entry in try redis.entries("out") {
            let result =
                try JSONSerialization.jsonObject(with: Data((entry.fields["result"] ?? "").utf8)) as? [String: Any]
            results[entry.fields["source"] ?? "?"] = result
        }
        #expect(Set(results.keys) == [good, missing, bad])
        #expect(results[good]?["input"] as? String == good)
        #expect(results[good]?["outcome"] as? String == "complete")
        #expect(results[missing]?["outcome"] as? String == "invalid")
        let problems = (missing: "\(results[missing]?["problems"] as Any)", bad: "\(results[bad]?["problems"] as Any)")
        #expect(problems.missing.contains("no-payload"))
        #expect(results[bad]?["outcome"] as? String == "invalid")
        #expect(problems.bad.contains("not-json"))
        #expect(try redis.pending("in", "g") == 0)
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
    }

    @Test(
        """
        an entry whose deadline is not a positive number of seconds gets an invalid result (bad-parameter, as serve \
        answers 400 for it), nothing fetched; a good deadline is taken
        """)
    func badDeadline() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        let payload = Self.payload(bed.url("/media/photo.jpg"))
        var ids: [String: String] = [:]
        for deadline in ["abc", "-1", "0", String(repeating: "1", count: 65), "2.5"] {
            ids[deadline] = try redis.add("in", [("payload", payload), ("deadline", deadline)])
        }
        let worker = try WorkerProcess(arguments(bed, redis, ["--create-group"]))
        try await waitUntil("five results") { try redis.entries("out").count == 5 }
        var results: [String: [String: Any]] = [:]
        for entry in try redis.entries("out") {
            results[entry.fields["source"] ?? "?"] =
                try JSONSerialization.jsonObject(with: Data((entry.fields["result"] ?? "").utf8)) as? [String: Any]
        }
        for deadline in ["abc", "-1", "0", String(repeating: "1", count: 65)] {
            let id = try #require(ids[deadline])
            let result = try #require(results[id])
            #expect(result["outcome"] as? String == "invalid", "\(deadline)")
            let problem = (result["problems"] as? [[String: Any]])?.first
            #expect(problem?["code"] as? String == "bad-parameter")
            let shown = deadline.count > 64 ? "<65 bytes>" : deadline
            let expected = "deadline: expected a positive decimal number of seconds, got '\(shown)'"
            #expect(problem?["detail"] as? String == expected)
        }
        let good = try #require(ids["2.5"])
        #expect(results[good]?["outcome"] as? String == "complete")
        // The refused entries fetched nothing: one request for the photo, the good entry's.
        #expect(bed.origin.requestLog.filter { $0 == "/media/photo.jpg" }.count == 1)
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
    }

    @Test(
        """
        a Redis that answers XREADGROUP ... BLOCK at once with nothing is read at most once a second, with one \
        warning, and its entries are still processed
        """)
    func nonBlockingRedis() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        let proxy = try NonBlockingProxy(redis)
        defer { proxy.stop() }
        let worker = try WorkerProcess(
            ["--redis", "redis://127.0.0.1:\(proxy.port)", "--stream", "in", "--group", "g", "--output-stream", "out"]
                + bed.cliOptions + ["--create-group"])
        try await waitUntil("four reads through the proxy") { proxy.reads.count >= 4 }
        let reads = proxy.reads
        // Each read asks for the block's end before the next: three gaps of a second at least, on any load (without
        // the pace, thousands of reads came in that time).
        #expect(reads[3] - reads[0] >= .milliseconds(2900), "\(reads.count) reads in \(reads[3] - reads[0])")
        _ = try redis.add("in", [("payload", Self.payload(bed.url("/media/photo.jpg")))])
        try await waitUntil("the entry's result") { try redis.entries("out").count == 1 }
        let warnings = worker.stderr.components(separatedBy: "that does not block?").count - 1
        #expect(warnings == 1, "\(worker.stderr)")
    }

    @Test("a worker killed mid-entry: another claims the entry after --claim-idle and writes its one result")
    func claimAfterKill() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        let options = ["--create-group", "--deadline", "1", "--claim-idle", "2"]
        let first = try WorkerProcess(arguments(bed, redis, options + ["--consumer", "a"]))
        let id = try redis.add("in", [("payload", Self.payload(bed.url("/stall-first/photo.jpg")))])
        try await waitUntil("the first worker to take the entry") { bed.origin.exchanges.count == 1 }
        first.signal(SIGKILL)
        _ = try await first.waitForExit(within: .seconds(10))
        #expect(try redis.pending("in", "g") == 1)
        let second = try WorkerProcess(arguments(bed, redis, options + ["--consumer", "b"]))
        try await waitUntil("the claimed entry's result", within: .seconds(30)) { try redis.entries("out").count == 1 }
        let results = try redis.entries("out")
        #expect(results.first?.fields["source"] == id)
        #expect(results.first?.fields["result"]?.contains(#""outcome":"complete""#) == true)
        #expect(try redis.pending("in", "g") == 0)
        second.signal(SIGTERM)
        #expect(try await second.waitForExit(within: .seconds(30)) == 0)
        #expect(try redis.entries("out").count == 1)
    }

    @Test("an entry delivered more than --max-deliveries times goes to the dead-letter stream, acknowledged, no result")
    func deadLetter() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        let options = ["--create-group", "--deadline", "1", "--claim-idle", "2", "--max-deliveries", "1"]
        let payload = Self.payload(bed.url("/stall-first/photo.jpg"))
        let first = try WorkerProcess(arguments(bed, redis, options + ["--consumer", "a"]))
        let id = try redis.add("in", [("payload", payload)])
        try await waitUntil("the first worker to take the entry") { bed.origin.exchanges.count == 1 }
        first.signal(SIGKILL)
        _ = try await first.waitForExit(within: .seconds(10))
        let second = try WorkerProcess(arguments(bed, redis, options + ["--consumer", "b"]))
        let dead = try await deadLetter(redis, within: .seconds(30))
        #expect(dead.fields["source"] == id)
        #expect(dead.fields["payload"] == payload)
        #expect(dead.fields["deliveries"] == "2")
        #expect(dead.fields["reason"]?.isEmpty == false)
        #expect(try redis.pending("in", "g") == 0)
        #expect(try redis.entries("out").isEmpty)
        #expect(bed.origin.exchanges.count == 1, "a dead-lettered entry is not fetched again")
        second.signal(SIGTERM)
        #expect(try await second.waitForExit(within: .seconds(30)) == 0)
    }

    /// An entry whose every claim was cut (too large to arrive within the reply timeout over the worker's link)
    /// counted a delivery each time and was never read whole: it is dead-lettered without being read again.
    @Test("an entry pending for another consumer, delivered more than --max-deliveries times, is dead-lettered unread")
    func deadLetterUnread() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        let payload = Self.payload(bed.url("/media/photo.jpg"))
        let id = try pendingForGone(redis, payload: payload)
        _ = try redis.client().run(["XCLAIM", "in", "g", "gone", "0", id, "RETRYCOUNT", "9", "JUSTID"])
        let worker = try WorkerProcess(
            arguments(bed, redis, ["--consumer", "b", "--deadline", "1", "--claim-idle", "2", "--max-deliveries", "3"]))
        let dead = try await deadLetter(redis, within: .seconds(30), worker.stderr)
        #expect(dead.fields["source"] == id)
        #expect(dead.fields["payload"] == payload)
        #expect(dead.fields["deliveries"] == "9")
        #expect(dead.fields["reason"] == "delivered 9 times without a result (dead-lettered unread)")
        #expect(try redis.pending("in", "g") == 0)
        #expect(try redis.entries("out").isEmpty)
        #expect(bed.origin.exchanges.isEmpty, "a dead-lettered entry is not fetched")
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
    }

    /// The whole path of an entry too large for the worker's link, end to end: over a link of 8 KB/s (a proxy), a
    /// claim of a 300 KB entry brings under the 64 KiB each 5 s window must (`SocketSource`), so it is cut
    /// (`claimCut`), a delivery counted; the next pass finds it delivered more than `--max-deliveries` times and
    /// dead-letters it unread. An entry of a few hundred bytes goes through the same link whole.
    @Test("an entry too large for a slow link: its claim is cut, then it is dead-lettered unread; a small one is read")
    func slowLinkClaimCut() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        // A payload of 300 KB: an APNs payload with a long custom field, its media a fixture.
        let large =
            #"{"aps":{"alert":"hi","mutable-content":1},"adb_media":"\#(bed.url("/media/photo.jpg"))","#
            + #""filler":""# + String(repeating: "x", count: 300_000) + #""}"#
        let id = try pendingForGone(redis, payload: large)
        let proxy = try ThrottledProxy(upstream: redis.port, bytesPerSecond: 8_000)
        defer { proxy.stop() }
        let worker = try WorkerProcess(
            arguments(
                bed, redis, ["--consumer", "b", "--deadline", "1", "--claim-idle", "2", "--max-deliveries", "1"],
                url: "redis://127.0.0.1:\(proxy.port)"))
        let dead = try await deadLetter(redis, within: .seconds(60), worker.stderr)
        #expect(dead.fields["source"] == id)
        #expect(dead.fields["payload"] == large)
        #expect(dead.fields["reason"] == "delivered 2 times without a result (dead-lettered unread)")
        #expect(worker.stderr.contains("timed out reading the reply"), "\(worker.stderr)")
        #expect(proxy.bytesAnswered < 200_000, "the entry came whole through the link: \(proxy.bytesAnswered) bytes")
        #expect(bed.origin.exchanges.isEmpty, "the large entry was never read whole, so never fetched")
        // The link itself works: a small entry is read, fetched and answered through it.
        let small = try redis.add("in", [("payload", Self.payload(bed.url("/media/photo.jpg")))])
        try await waitUntil("the small entry's result", within: .seconds(60)) { try redis.entries("out").count == 1 }
        #expect(try redis.entries("out").first?.fields["source"] == small)
        #expect(try redis.pending("in", "g") == 0)
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
    }

    /// A look's claim cut, end to end: an entry of 300 KB pending for the worker's consumer (delivered behind its
    /// back) over a link of 8 KB/s. The start's look claims it and is cut at the reply window; that entry is then
    /// left out of the looks, so reading goes on: a small entry added meanwhile is read, fetched and written. (Looked
    /// for again after each cut, it took a reply window and a delivery each time, and nothing was read until it was
    /// dead-lettered: about 45 s at --max-deliveries 10.)
    @Test("a look whose claim of an entry too large for the link is cut leaves that entry out: reading goes on")
    func lookCutReadsOn() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        try redis.client().run(["XGROUP", "CREATE", "in", "g", "$", "MKSTREAM"])
        let large =
            #"{"aps":{"alert":"hi","mutable-content":1},"adb_media":"\#(bed.url("/media/photo.jpg"))","#
            + #""filler":""# + String(repeating: "x", count: 300_000) + #""}"#
        let id = try deliverBehindItsBack(redis, to: "b", payload: large)
        let proxy = try ThrottledProxy(upstream: redis.port, bytesPerSecond: 8_000)
        defer { proxy.stop() }
        let worker = try WorkerProcess(
            arguments(
                bed, redis, ["--consumer", "b", "--claim-idle", "600", "--max-deliveries", "10"],
                url: "redis://127.0.0.1:\(proxy.port)"))
        let small = try redis.add("in", [("payload", Self.payload(bed.url("/media/photo.jpg")))])
        try await waitUntil("the small entry's result", within: .seconds(30)) { try redis.entries("out").count == 1 }
        #expect(try redis.entries("out").first?.fields["source"] == small)
        #expect(worker.stderr.contains("timed out reading the reply"), "the look was cut: \(worker.stderr)")
        #expect(try redis.entries("in:dead").isEmpty)
        let pending = try redis.client().run(["XPENDING", "in", "g", id, id, "1"]).elements.first?.elements
        #expect(pending?.dropFirst(3).first == .integer(2), "one cut look, one delivery counted")
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
    }

    @Test("a worker whose entry was claimed by another meanwhile writes nothing for it")
    func lostOwnership() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        let worker = try WorkerProcess(
            arguments(bed, redis, ["--create-group", "--consumer", "a", "--metrics-listen", "127.0.0.1:0"]))
        let metricsPort = try await worker.metricsPort()
        let id = try redis.add("in", [("payload", Self.payload(bed.url("/slow/photo.jpg?ms=1500")))])
        try await waitUntil("the worker to take the entry") { bed.origin.exchanges.count == 1 }
        // Another consumer takes it over while the worker is still fetching.
        let claimed = try redis.client().run(["XCLAIM", "in", "g", "thief", "0", id])
        #expect(claimed.elements.count == 1)
        // The write is tried once the fetch is over: the worker counts the result written or dropped.
        var metrics = ""
        try await waitUntil("the worker to try its write", within: .seconds(30), every: .milliseconds(50)) {
            metrics = Self.metrics(metricsPort)
            return ["dropped", "written"].contains {
                metrics.contains("richpush_worker_entries_total{result=\"\($0)\"} 1")
            }
        }
        #expect(try redis.entries("out").isEmpty, "the worker wrote a result for an entry it no longer owned")
        #expect(metrics.contains("richpush_worker_entries_total{result=\"dropped\"} 1"))
        #expect(try redis.pending("in", "g") == 1)
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
    }

    @Test("Redis restarting mid-entry: the result is written once it is back, once")
    func redisRestart() async throws {
        let bed = try TestBed()
        let redis = try RedisServer(appendOnly: true)
        let worker = try WorkerProcess(arguments(bed, redis, ["--create-group"]))
        let id = try redis.add("in", [("payload", Self.payload(bed.url("/slow/photo.jpg?ms=1000")))])
        try await waitUntil("the worker to take the entry") { bed.origin.exchanges.count == 1 }
        redis.stop()
        // The result is computed while the server is away, and its write fails; it is written once the server is
        // back.
        try await waitUntil("a write to fail", within: .seconds(30)) { worker.stderr.contains("writing:") }
        try redis.start()
        try await waitUntil("the result after the restart", within: .seconds(30)) {
            try redis.entries("out").count == 1
        }
        #expect(try redis.entries("out").first?.fields["source"] == id)
        #expect(try redis.pending("in", "g") == 0)
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
        #expect(try redis.entries("out").count == 1)
    }

    @Test(
        """
        SIGTERM drains: entries in flight are finished and written, nothing left pending, exit 0; SIGHUP changes \
        nothing
        """)
    func drain() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        let worker = try WorkerProcess(arguments(bed, redis, ["--create-group", "--consumer", "a"]))
        for index in 0..<3 {
            _ = try redis.add("in", [("payload", Self.payload(bed.url("/slow/photo.jpg?ms=1000&n=\(index)")))])
        }
        try await waitUntil("three entries in flight") { bed.origin.exchanges.count == 3 }
        // A SIGHUP is said and changes nothing (it ended the worker at once, with no drain).
        worker.signal(SIGHUP)
        try await waitUntil("the SIGHUP's line") { worker.stderr.contains("SIGHUP: nothing to read again") }
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
        let results = try redis.entries("out")
        #expect(results.count == 3)
        #expect(results.allSatisfy { $0.fields["result"]?.contains(#""outcome":"complete""#) == true })
        #expect(try redis.pending("in", "g") == 0)
        #expect(!bed.filesOnDisk().contains { $0.hasSuffix(".partial") })
    }

    /// A worker of consumer `a` (`--create-group`), once it has written the result of a first entry; that entry's id.
    func workerWithFirstResult(_ bed: TestBed, _ redis: RedisServer) async throws -> (WorkerProcess, String) {
        let worker = try WorkerProcess(arguments(bed, redis, ["--create-group", "--consumer", "a"]))
        let first = try redis.add("in", [("payload", Self.payload(bed.url("/media/photo.jpg")))])
        try await waitUntil("the first result") { try redis.entries("out").count == 1 }
        return (worker, first)
    }

    /// Adds an entry of `payload` to `in` and delivers it to `consumer` in one step, on another connection: as a
    /// read of that consumer whose reply was lost, the worker's own reads never see it. Returns its id.
    func deliverBehindItsBack(_ redis: RedisServer, to consumer: String, payload: String) throws -> String {
        let script = """
            local id = redis.call('XADD', 'in', '*', 'payload', ARGV[1])
            redis.call('XREADGROUP', 'GROUP', 'g', ARGV[2], 'COUNT', '1', 'STREAMS', 'in', '>')
            return id
            """
        return try #require(redis.client().run(["EVAL", script, "0", payload, consumer]).text)
    }

    @Test(
        """
        an entry pending for the worker's consumer that the worker never received (a read whose reply was lost) is \
        taken at the drain and written: nothing is left pending, the consumer leaves the group, a line says so
        """)
    func drainWithLostRead() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        let (worker, first) = try await workerWithFirstResult(bed, redis)
        let unseen = try deliverBehindItsBack(redis, to: "a", payload: Self.payload(bed.url("/media/photo.jpg")))
        #expect(try redis.consumers("in", "g")["a"]?.pending == 1)
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
        #expect(
            worker.stderr.contains("took 1 entry pending for consumer 'a' that it had not received"),
            "\(worker.stderr)")
        #expect(!worker.stderr.contains("kept in the group"), "\(worker.stderr)")
        let results = try redis.entries("out")
        #expect(results.map { $0.fields["source"] } == [first, unseen])
        #expect(results.last?.fields["result"]?.contains(#""outcome":"complete""#) == true)
        #expect(try redis.pending("in", "g") == 0)
        #expect(try redis.consumers("in", "g")["a"] == nil, "removed")
    }

    @Test(
        """
        a reader's command failing (its connection closed) makes the worker look for entries delivered to it unseen: \
        one delivered to a read whose reply was lost is written within seconds, not after --claim-idle
        """)
    func lostReadRecovered() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        let (worker, _) = try await workerWithFirstResult(bed, redis)
        let unseen = try deliverBehindItsBack(redis, to: "a", payload: Self.payload(bed.url("/media/photo.jpg")))
        // The reader's next command fails on its closed connection, as a read cut at its timeout does.
        let killed = try redis.client().run(["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"])
        #expect(killed != .integer(0))
        // --claim-idle is 60 s by default: a claim would take it no sooner.
        try await waitUntil("the unseen entry's result", within: .seconds(30)) {
            try redis.entries("out").count == 2
        }
        #expect(try redis.entries("out").last?.fields["source"] == unseen)
        try await waitUntil("the line that says so") { worker.stderr.contains("took 1 entry pending for consumer 'a'") }
        #expect(try redis.pending("in", "g") == 0)
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
        #expect(try redis.entries("out").count == 2)
    }

    @Test(
        """
        a worker started under a consumer name with entries pending (an earlier process of that name) takes them at \
        once, each delivery counted: one delivered --max-deliveries times already is dead-lettered unread, not run \
        again
        """)
    func earlierProcessEntries() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        let admin = redis.client()
        try admin.run(["XGROUP", "CREATE", "in", "g", "$", "MKSTREAM"])
        let plain = try deliverBehindItsBack(redis, to: "a", payload: Self.payload(bed.url("/media/photo.jpg")))
        // Delivered three times to `a`: an entry whose processing killed three processes of that name.
        let poison = try deliverBehindItsBack(redis, to: "a", payload: Self.payload(bed.url("/media/photo.jpg")))
        for _ in 0..<2 { try admin.run(["XCLAIM", "in", "g", "a", "0", poison]) }
        let worker = try WorkerProcess(
            arguments(bed, redis, ["--consumer", "a", "--max-deliveries", "3", "--claim-idle", "600"]))
        let letter = try await deadLetter(redis, within: .seconds(30), worker.stderr)
        #expect(letter.fields["source"] == poison)
        #expect(letter.fields["deliveries"] == "3")
        #expect(letter.fields["reason"] == "delivered 3 times without a result (dead-lettered unread)")
        try await waitUntil("the other entry's result", within: .seconds(30)) { try redis.entries("out").count == 1 }
        #expect(try redis.entries("out").first?.fields["source"] == plain)
        #expect(bed.origin.exchanges.count == 1, "the dead letter was not fetched")
        #expect(try redis.pending("in", "g") == 0)
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
    }

    @Test(
        """
        Redis closing the worker's idle connections (CLIENT KILL) costs no failed write, and the drain still removes \
        the consumer
        """)
    func drainAfterConnectionsClosed() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        let (worker, _) = try await workerWithFirstResult(bed, redis)
        let client = redis.client()
        let killed = try client.run(["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"])
        #expect(killed != .integer(0), "the worker's connections were closed")
        // The next result is written on a new connection at once, no failure said.
        _ = try redis.add("in", [("payload", Self.payload(bed.url("/media/photo.jpg")))])
        try await waitUntil("the second result") { try redis.entries("out").count == 2 }
        #expect(!worker.stderr.contains("richpush worker: writing:"), "\(worker.stderr)")
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
        #expect(!worker.stderr.contains("could not remove consumer"), "\(worker.stderr)")
        #expect(try redis.consumers("in", "g")["a"] == nil, "removed")
    }

    @Test(
        """
        SIGTERM while writes fail (Redis down): the process exits at --drain-timeout, status 75, saying what it left \
        pending
        """
    )
    func drainWhileWritesFail() async throws {
        let bed = try TestBed()
        let redis = try RedisServer(appendOnly: true)
        let worker = try WorkerProcess(
            arguments(bed, redis, ["--create-group", "--consumer", "a", "--drain-timeout", "2"]))
        let id = try redis.add("in", [("payload", Self.payload(bed.url("/slow/photo.jpg?ms=1000")))])
        try await waitUntil("the worker to take the entry") { bed.origin.exchanges.count == 1 }
        redis.stop()
        try await waitUntil("a write to fail", within: .seconds(30)) { worker.stderr.contains("writing:") }
        worker.signal(SIGTERM)
        // 2 s of drain, and room for a loaded machine: before the fix it never exited.
        #expect(try await worker.waitForExit(within: .seconds(20)) == 75)
        #expect(worker.stderr.contains("passed with 1 entry not written (1 with a result ready, 0 still in process)"))
        #expect(worker.stderr.contains("stay pending for consumer 'a'"))
        try redis.start()
        #expect(try redis.entries("out").isEmpty)
        let pending = try redis.client().run(["XPENDING", "in", "g", "-", "+", "10"]).elements
        #expect(pending.map { $0.elements.prefix(2).compactMap(\.text) } == [[id, "a"]])
    }

    @Test(
        """
        SIGTERM with work in flight and Redis up: --drain-timeout cuts the drain, the payload is cancelled long before \
        its deadline, the entry stays pending, status 75
        """
    )
    func drainTimeoutWithWorkInFlight() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        let worker = try WorkerProcess(
            arguments(bed, redis, ["--create-group", "--consumer", "a", "--drain-timeout", "1", "--deadline", "40"]))
        // 118 KB at 2 KiB a second (above the engine's 1 KiB/s floor): the payload would run until its 40 s deadline.
        let id = try redis.add("in", [("payload", Self.payload(bed.url("/drip/plain-100mp.png?bytes=2048&ms=1000")))])
        try await waitUntil("the worker to fetch the entry's media") { bed.origin.exchanges.count == 1 }
        let signalled = ContinuousClock.now
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 75)
        // 1 s of drain, then the engine's shutdown: measured about 1.1 s. 15 s is room for a loaded machine and
        // still far short of the 40 s the payload would have taken.
        #expect(ContinuousClock.now - signalled < .seconds(15))
        #expect(worker.stderr.contains("passed with 1 entry not written (0 with a result ready, 1 still in process)"))
        #expect(!worker.stderr.contains("writes were failing"))
        #expect(try redis.entries("out").isEmpty)
        let pending = try redis.client().run(["XPENDING", "in", "g", "-", "+", "10"]).elements
        #expect(pending.map { $0.elements.prefix(2).compactMap(\.text) } == [[id, "a"]])
        #expect(!bed.filesOnDisk().contains { $0.hasSuffix(".partial") })
    }

    @Test("/readyz follows Redis while every slot is taken: 503 once Redis is down, 200 once it is back")
    func readinessWhileSaturated() async throws {
        let bed = try TestBed()
        let redis = try RedisServer(appendOnly: true)
        // One slot, taken by an entry whose origin never answers (within a 300 s deadline): the reader reads
        // nothing more for the whole test.
        let worker = try WorkerProcess(
            arguments(
                bed, redis,
                [
                    "--create-group", "--consumer", "a", "--concurrency", "1", "--deadline", "300", "--claim-idle",
                    "600",
                    "--drain-timeout", "1", "--metrics-listen", "127.0.0.1:0",
                ]))
        let port = try await worker.metricsPort()
        func ready() -> Int? { try? HTTPConnection(port: port).exchange("GET", "/readyz", within: .seconds(5)).status }
        let id = try redis.add("in", [("payload", Self.payload(bed.url("/silence")))])
        try await waitUntil("the worker to take the entry") { try redis.pending("in", "g") == 1 }
        try await waitUntil("readiness") { ready() == 200 }
        redis.stop()
        // A check a second, a refused connection at once: 15 s is room for a loaded machine.
        try await waitUntil("/readyz to say 503 with Redis down", within: .seconds(15)) { ready() == 503 }
        try redis.start()
        // The reconnection's backoff waits up to 5 s between attempts.
        try await waitUntil("/readyz to say 200 with Redis back", within: .seconds(30)) { ready() == 200 }
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(20)) == 75)
        let pending = try redis.client().run(["XPENDING", "in", "g", "-", "+", "10"]).elements
        #expect(pending.map { $0.elements.prefix(2).compactMap(\.text) } == [[id, "a"]])
    }

    @Test("a worker's clean exit removes its consumer: three restarts leave none in the group")
    func consumerRemovedAtExit() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        for round in 1...3 {
            // The default consumer name, <hostname>-<pid>-<random>: a new consumer at every start.
            let worker = try WorkerProcess(arguments(bed, redis, ["--create-group"]))
            _ = try redis.add("in", [("payload", Self.payload(bed.url("/media/photo.jpg?n=\(round)")))])
            try await waitUntil("result \(round)", within: .seconds(30)) { try redis.entries("out").count == round }
            let names = try Array(redis.consumers("in", "g").keys)
            #expect(names.count == 1)
            #expect(
                names.allSatisfy { $0.wholeMatch(of: /.+-[0-9]+-[0-9a-f]{8}/) != nil },
                "a host, a process id and 8 random hex digits: \(names)")
            worker.signal(SIGTERM)
            #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
            #expect(try redis.consumers("in", "g").isEmpty)
        }
    }

    @Test(
        "consumers idle past --remove-idle-consumers with nothing pending are removed; one with an entry pending stays")
    func idleConsumersRemoved() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        let client = redis.client()
        try client.run(["XGROUP", "CREATE", "in", "g", "$", "MKSTREAM"])
        let held = try redis.add("in", [("payload", Self.payload(bed.url("/media/photo.jpg")))])
        _ = try client.run(["XREADGROUP", "GROUP", "g", "holder", "COUNT", "1", "STREAMS", "in", ">"])
        try client.run(["XGROUP", "CREATECONSUMER", "in", "g", "ghost"])
        try await waitUntil("both consumers to be idle over a second") {
            try redis.consumers("in", "g").values.allSatisfy { $0.idle > 1100 }
        }
        // --claim-idle far beyond the test: the holder's entry stays its own.
        let worker = try WorkerProcess(
            arguments(bed, redis, ["--consumer", "a", "--remove-idle-consumers", "1", "--claim-idle", "600"]))
        try await waitUntil("the idle consumer without entries to be removed") {
            try redis.consumers("in", "g")["ghost"] == nil
        }
        #expect(try redis.consumers("in", "g")["holder"]?.pending == 1)
        // Logged after Redis answered the removal: the line can come a moment after the consumer is gone (a full run
        // read stderr before the worker had written it).
        try await waitUntil("the removal to be logged") { worker.stderr.contains("without pending entries: ghost") }
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
        #expect(Array(try redis.consumers("in", "g").keys) == ["holder"])
        let pending = try client.run(["XPENDING", "in", "g", "-", "+", "10"]).elements
        #expect(pending.map { $0.elements.prefix(2).compactMap(\.text) } == [[held, "holder"]])
    }

    /// Where a test's worker takes the Redis password from.
    enum PasswordSource: String, CaseIterable, Sendable {
        case url, aclUser, environment, file
    }

    /// A password with every character a URL must percent-encode in it, and one beyond ASCII.
    static let password = "p@ss:w/rd%?#[] é"
    static let alicePassword = "alice's:@/%"

    /// `text` percent-encoded for a URL's user information (RFC 3986: unreserved characters as they are).
    static func encoded(_ text: String) -> String {
        text.addingPercentEncoding(
            withAllowedCharacters: CharacterSet(
                charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~"))!
    }

    /// A file of the test's own holding `text`, with `mode`.
    static func secretFile(_ text: String, mode: Int16) throws -> String {
        let path = NSTemporaryDirectory() + "richpush-secret-" + UUID().uuidString
        #expect(
            FileManager.default.createFile(
                atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: mode]))
        return path
    }

    @Test(
        "the Redis password from the URL (percent-encoded), an ACL user's, REDISCLI_AUTH, or --redis-password-file",
        arguments: PasswordSource.allCases)
    func password(source: PasswordSource) async throws {
        let bed = try TestBed()
        let redis = try RedisServer(
            password: Self.password,
            arguments: ["--user", "alice", "on", ">" + Self.alicePassword, "~*", "&*", "+@all"])
        _ = try redis.add("in", [("payload", Self.payload(bed.url("/media/photo.jpg")))])
        var url = redis.url
        var options = ["--create-group"]
        var environment: [String: String] = [:]
        var file: String? = nil
        defer { file.map { try? FileManager.default.removeItem(atPath: $0) } }
        switch source {
        case .url: url = "redis://:\(Self.encoded(Self.password))@127.0.0.1:\(redis.port)/0"
        // The default user's password would fail as alice's: the worker must send AUTH alice <hers>.
        case .aclUser: url = "redis://alice:\(Self.encoded(Self.alicePassword))@127.0.0.1:\(redis.port)"
        case .environment: environment["REDISCLI_AUTH"] = Self.password
        case .file:
            file = try Self.secretFile(Self.password + "\n", mode: 0o600)
            options += ["--redis-password-file", file!]
        }
        let worker = try WorkerProcess(
            ["--redis", url, "--stream", "in", "--group", "g", "--output-stream", "out"] + bed.cliOptions + options,
            environment: environment)
        try await waitUntil("the result", within: .seconds(30)) { try redis.entries("out").count == 1 }
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
        #expect(!worker.stderr.contains("warning"), "a file of mode 0600 is not warned about")
        #expect(!worker.stderr.contains("p@ss") && !worker.stderr.contains("alice's"))
    }

    @Test(
        """
        a wrong or missing password exits 70 at start-up, saying so without the password; a bad password file is a \
        usage error
        """
    )
    func passwordRefused() async throws {
        let bed = try TestBed()
        let redis = try RedisServer(password: Self.password)
        let base = ["--stream", "in", "--group", "g", "--output-stream", "out", "--create-group"] + bed.cliOptions
        func run(_ url: String, _ options: [String] = [], environment: [String: String] = [:]) async throws -> (
            Int32, String
        ) {
            let worker = try WorkerProcess(["--redis", url] + base + options, environment: environment)
            // Before the fix a wrong password was retried for ever.
            let status = try await worker.waitForExit(within: .seconds(20))
            return (status, worker.stderr)
        }
        let wrong = try await run("redis://:Wr0ngSecret@127.0.0.1:\(redis.port)")
        #expect(wrong.0 == 70)
        #expect(wrong.1.contains("authentication failed: WRONGPASS"))
        #expect(!wrong.1.contains("Wr0ngSecret"))
        let fromEnvironment = try await run(redis.url, environment: ["REDISCLI_AUTH": "Wr0ngSecret"])
        #expect(fromEnvironment.0 == 70)
        #expect(!fromEnvironment.1.contains("Wr0ngSecret"))
        let none = try await run(redis.url)
        #expect(none.0 == 70)
        #expect(none.1.contains("requires authentication"))
        // A FIFO would block the start until someone writes to it: refused without opening it for reading.
        let fifo = NSTemporaryDirectory() + "richpush-fifo-" + UUID().uuidString
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        let fromFIFO = try await run(redis.url, ["--redis-password-file", fifo])
        #expect(fromFIFO.0 == 64)
        #expect(fromFIFO.1.contains("is not a regular file (a FIFO)"))
        let empty = try Self.secretFile("\n", mode: 0o600)
        defer { try? FileManager.default.removeItem(atPath: empty) }
        #expect(try await run(redis.url, ["--redis-password-file", empty]).1.contains("is empty"))
        let both = try await run("redis://:Wr0ngSecret@127.0.0.1:\(redis.port)", ["--redis-password-file", empty])
        #expect(both.0 == 64)
        #expect(both.1.contains("holds a password too") && !both.1.contains("Wr0ngSecret"))
        let userAlone = try await run("redis://alice@127.0.0.1:\(redis.port)")
        #expect(userAlone.0 == 64)
        #expect(userAlone.1.contains("names a user but no password"))
    }

    @Test("a password file that group or others may read works, with a warning")
    func readablePasswordFile() async throws {
        let bed = try TestBed()
        let redis = try RedisServer(password: Self.password)
        _ = try redis.add("in", [("payload", Self.payload(bed.url("/media/photo.jpg")))])
        let file = try Self.secretFile(Self.password + "\r\nsecond line", mode: 0o644)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let worker = try WorkerProcess(arguments(bed, redis, ["--create-group", "--redis-password-file", file]))
        try await waitUntil("the result", within: .seconds(30)) { try redis.entries("out").count == 1 }
        #expect(worker.stderr.contains("can be read by group or others (mode 0644)"))
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
    }

    @Test(
        "a malformed --redis URL is a usage error that never repeats its password",
        arguments: [
            ("redis://:Hunter2Secret@127.0.0.1:notaport", "the port"),
            ("redis://user:Hunter2Secret@127.0.0.1:6379/x", "the database"),
            ("redis://:Hunter2%zzSecret@127.0.0.1:6379", "percent-encoded"),
            ("redis://:Hunter2/Secret@127.0.0.1:6379", "must be percent-encoded"),
            ("redis://:Hunter2Secret", "no host"),
            ("redis://:Hunter2Secret@", "no host"),
            ("redis:/:Hunter2Secret@127.0.0.1:6379", "expected redis://"),
            ("rediss://:Hunter2Secret@127.0.0.1:6379", "TLS"),
            ("redis://:Hunter2Secret@127.0.0.1:6379?db=1", "query"),
        ])
    func malformedURL(url: String, reason: String) async throws {
        let worker = try WorkerProcess(["--redis", url, "--stream", "in", "--group", "g", "--output-stream", "out"])
        #expect(try await worker.waitForExit(within: .seconds(20)) == 64)
        #expect(worker.stderr.contains(reason))
        #expect(!worker.stderr.contains("Hunter2"))
    }

    @Test(
        """
        entries far over the payload limit are never held: three of 16 MiB add less than one to the worker's peak \
        memory
        """
    )
    func largeEntries() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        let worker = try WorkerProcess(arguments(bed, redis, ["--create-group", "--no-transform"]))
        // A first entry, refused at once (not JSON), so that the baseline is a worker that has read and written.
        _ = try redis.add("in", [("payload", "x")])
        try await waitUntil("the first result") { try redis.entries("out").count == 1 }
        let baseline = try Self.peakMemory(of: worker)
        let size = 16 << 20
        // Off the cooperative pool: each is copied three times on its way to Redis.
        try await offPool {
            let big = String(repeating: "a", count: size)
            for _ in 0..<3 { _ = try redis.add("in", [("other", "field"), ("payload", big), ("deadline", "5")]) }
        }
        try await waitUntil("four results", within: .seconds(60)) {
            try redis.client().run(["XLEN", "out"]) == .integer(4)
        }
        let growth = try Self.peakMemory(of: worker) - baseline
        // Measured: 72 KiB (with three of 32 MiB). Before, hiredis held each value whole in its buffer and again as
        // its reply, and the worker a third time: 706 MB for three 100 MB entries, from a 23 MB baseline.
        #expect(growth < size, "the worker's peak grew by \(growth) bytes")
        let results = try redis.client().run(["XRANGE", "out", "-", "+"]).elements.dropFirst()
        for result in results {
            let fields = result.elements.dropFirst().first?.elements.compactMap(\.text) ?? []
            #expect(
                fields.last?.contains(
                    #""code":"payload-too-large","detail":"the input is 16777216 bytes; the limit is 1048576""#) == true
            )
        }
        #expect(try redis.pending("in", "g") == 0)
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
    }

    /// A process's peak resident memory (VmHWM), in bytes.
    static func peakMemory(of worker: WorkerProcess) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(worker.process.processIdentifier)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") })
        let kilobytes = try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
        return kilobytes * 1024
    }

    @Test("an ACL user that may not remove consumers still works: the refusal is logged, not retried")
    func consumerRemovalRefused() async throws {
        let bed = try TestBed()
        let redis = try RedisServer(
            password: Self.password,
            arguments: ["--user", "worker", "on", ">secret", "~*", "&*", "+@all", "-xgroup|delconsumer"])
        try redis.client().run(["XGROUP", "CREATE", "in", "g", "$", "MKSTREAM"])
        try redis.client().run(["XGROUP", "CREATECONSUMER", "in", "g", "ghost"])
        try await waitUntil("the ghost to be idle over a second") {
            try redis.consumers("in", "g")["ghost"]?.idle ?? 0 > 1100
        }
        let url = "redis://worker:secret@127.0.0.1:\(redis.port)"
        let worker = try WorkerProcess(
            [
                "--redis", url, "--stream", "in", "--group", "g", "--output-stream", "out", "--consumer", "a",
                "--remove-idle-consumers", "1",
            ]
                + bed.cliOptions)
        // Redis's own record of the refusal: the attempt happened.
        try await waitUntil("the refusal", within: .seconds(30)) {
            try redis.client().run(["ACL", "LOG"]).elements.contains {
                $0.elements.compactMap(\.text).contains("xgroup|delconsumer")
            }
        }
        // Before, the refusal failed the claiming round, which was tried again and again: nothing more was read.
        _ = try redis.add("in", [("payload", Self.payload(bed.url("/media/photo.jpg")))])
        try await waitUntil("the result", within: .seconds(30)) { try redis.entries("out").count == 1 }
        #expect(worker.stderr.contains("could not remove idle consumers"))
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
        #expect(worker.stderr.contains("could not remove consumer 'a'"))
    }

    @Test(
        """
        an ACL user that may not XCLAIM still works: the look for entries never received is refused, said once, and \
        such an entry is claimed after --claim-idle as before
        """)
    func lookRefused() async throws {
        let bed = try TestBed()
        let redis = try RedisServer(
            password: Self.password,
            arguments: ["--user", "worker", "on", ">secret", "~*", "&*", "+@all", "-xclaim"])
        try redis.client().run(["XGROUP", "CREATE", "in", "g", "$", "MKSTREAM"])
        let unseen = try deliverBehindItsBack(redis, to: "a", payload: Self.payload(bed.url("/media/photo.jpg")))
        let worker = try WorkerProcess(
            [
                "--redis", "redis://worker:secret@127.0.0.1:\(redis.port)", "--stream", "in", "--group", "g",
                "--output-stream", "out", "--consumer", "a", "--claim-idle", "2", "--deadline", "1",
            ]
                + bed.cliOptions)
        try await waitUntil("the refusal said", within: .seconds(30)) {
            worker.stderr.contains("could not look for entries pending for consumer 'a' that it never received")
        }
        // Read meanwhile: the refusal does not hold the reader.
        let fresh = try redis.add("in", [("payload", Self.payload(bed.url("/media/photo.jpg?n=1")))])
        try await waitUntil("both results", within: .seconds(30)) { try redis.entries("out").count == 2 }
        #expect(Set(try redis.entries("out").compactMap { $0.fields["source"] }) == [unseen, fresh])
        #expect(try redis.pending("in", "g") == 0)
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
        let said = worker.stderr.components(separatedBy: "could not look for entries").count - 1
        #expect(said == 1, "said once: \(worker.stderr)")
    }

    @Test("two workers sharing a stream: every entry gets exactly one result")
    func twoWorkers() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        var ids: Set<String> = []
        for index in 0..<20 {
            ids.insert(
                try redis.add("in", [("payload", Self.payload(bed.url("/slow/photo.jpg?ms=200&n=\(index % 5)")))]))
        }
        let first = try WorkerProcess(
            arguments(bed, redis, ["--create-group", "--consumer", "a", "--concurrency", "4"]))
        let second = try WorkerProcess(
            arguments(bed, redis, ["--create-group", "--consumer", "b", "--concurrency", "4"]))
        try await waitUntil("twenty results", within: .seconds(60)) { try redis.entries("out").count >= 20 }
        first.signal(SIGTERM)
        second.signal(SIGTERM)
        #expect(try await first.waitForExit(within: .seconds(30)) == 0)
        #expect(try await second.waitForExit(within: .seconds(30)) == 0)
        let sources = try redis.entries("out").compactMap { $0.fields["source"] }
        #expect(sources.count == 20)
        #expect(Set(sources) == ids)
        #expect(try redis.pending("in", "g") == 0)
        // Both wrote into one attachments directory (the shared volume of a deployment): every result's file is
        // there, whole, whichever worker stored it.
        for entry in try redis.entries("out") {
            let result =
                try JSONSerialization.jsonObject(with: Data((entry.fields["result"] ?? "").utf8)) as? [String: Any]
            let attachment = try #require((result?["attachments"] as? [[String: Any]])?.first)
            let path = try #require(attachment["path"] as? String)
            #expect(path.hasPrefix(bed.attachments + "/"))
            #expect(try await sha256sum(path) == attachment["sha256"] as? String)
        }
    }

    @Test("over a unix socket; without --create-group a missing group is an error naming it (exit 70)")
    func unixSocketAndMissingGroup() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        _ = try redis.add("in", [("payload", Self.payload(bed.url("/media/photo.jpg")))])
        let base =
            ["--redis", "unix://" + redis.socketPath, "--stream", "in", "--group", "g", "--output-stream", "out"]
            + bed.cliOptions
        let missing = try await CLI.run(["worker"] + base)
        #expect(missing.status == 70)
        #expect(missing.stderr.contains("no group 'g'"))
        let worker = try WorkerProcess(base + ["--create-group"])
        try await waitUntil("the result over the unix socket") { try redis.entries("out").count == 1 }
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
    }

    @Test("backpressure: a worker holds at most --concurrency entries")
    func backpressure() async throws {
        let bed = try TestBed()
        let redis = try RedisServer()
        for index in 0..<6 {
            _ = try redis.add("in", [("payload", Self.payload(bed.url("/slow/photo.jpg?ms=800&n=\(index)")))])
        }
        let worker = try WorkerProcess(arguments(bed, redis, ["--create-group", "--concurrency", "2"]))
        var most = 0
        try await waitUntil("six results", within: .seconds(60)) {
            most = max(most, try redis.pending("in", "g"))
            return try redis.entries("out").count == 6
        }
        #expect(most <= 2)
        #expect(most >= 1)
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(within: .seconds(30)) == 0)
    }
}

@Suite("Worker: when results are written, and the script that writes them")
struct WorkerWritingTests {
    @Test(
        "a batch is half the concurrency, at least 1, at most 128",
        arguments: [(1, 1), (2, 1), (3, 1), (32, 16), (64, 32), (256, 128), (10_000, 128)])
    func batchSize(concurrency: Int, size: Int) {
        #expect(WriteBatching(concurrency: concurrency).size == size)
    }

    @Test(
        "a batch is filled by its size or by all entries in flight; only its first and filling results wake the writer")
    func filling() {
        let batching = WriteBatching(concurrency: 64)
        #expect(!batching.filled(queued: 31, inFlight: 64))
        #expect(batching.filled(queued: 32, inFlight: 64))
        #expect(batching.filled(queued: 5, inFlight: 5))
        let wakes = (1...64).filter { batching.wakesWriter(queued: $0, inFlight: 64) }
        #expect(wakes == [1, 32])
        // Five in flight: the fifth result is the last one coming.
        #expect((1...5).filter { batching.wakesWriter(queued: $0, inFlight: 5) } == [1, 5])
    }

    @Test("a partial batch is due once its oldest result has waited the linger")
    func linger() {
        let batching = WriteBatching(concurrency: 64, linger: .milliseconds(2))
        let oldest = ContinuousClock.now
        #expect(!batching.due(queued: 3, inFlight: 64, oldest: oldest, now: oldest + .milliseconds(1)))
        #expect(batching.due(queued: 3, inFlight: 64, oldest: oldest, now: oldest + .milliseconds(2)))
        #expect(batching.due(queued: 32, inFlight: 64, oldest: oldest, now: oldest))
        #expect(!batching.due(queued: 0, inFlight: 64, oldest: oldest, now: oldest + .seconds(1)))
    }

    @Test("the script writes and acknowledges only entries this consumer owns, and an id given twice once")
    func writeScript() throws {
        let redis = try RedisServer()
        let client = redis.client()
        let ids = try (0..<3).map { index in try redis.add("in", [("payload", "p\(index)")]) }
        try client.run(["XGROUP", "CREATE", "in", "g", "0"])
        _ = try client.run(["XREADGROUP", "GROUP", "g", "a", "COUNT", "3", "STREAMS", "in", ">"])
        // Another consumer took the second entry over.
        _ = try client.run(["XCLAIM", "in", "g", "b", "0", ids[1]])
        let reply = try client.run([
            "EVAL", StreamWorker.writeScript, "2", "in", "out", "g", "a",
            ids[0], "r0", ids[1], "r1", ids[0], "again", ids[2], "r2",
        ])
        #expect(reply == .array([.integer(1), .integer(0), .integer(0), .integer(1)]))
        let written = try redis.entries("out").map { [$0.fields["source"] ?? "", $0.fields["result"] ?? ""] }
        #expect(written == [[ids[0], "r0"], [ids[2], "r2"]])
        // Acknowledged: only the entry the other consumer owns is still pending.
        let pending = try client.run(["XPENDING", "in", "g", "-", "+", "10"]).elements
        #expect(pending.map { $0.elements.prefix(2).compactMap(\.text) } == [[ids[1], "b"]])
    }
}

@Suite("Worker: Redis URLs")
struct RedisURLTests {
    @Test(
        "each part of a URL, the user and password percent-decoded",
        arguments: [
            ("redis://127.0.0.1:6380", "127.0.0.1", 6380, nil, nil, 0),
            ("REDIS://cache.internal", "cache.internal", 6379, nil, nil, 0),
            ("redis://:p%40ss%3Aw%2Frd%25@h:1/2", "h", 1, nil, "p@ss:w/rd%", 2),
            ("redis://alice:s%20e%C3%A9@h:1", "h", 1, "alice", "s eé", 0),
            ("redis://:p@ss@h", "h", 6379, nil, "p@ss", 0),
            ("redis://alice@h:1/", "h", 1, "alice", nil, 0),
            ("redis://alice:@h", "h", 6379, "alice", nil, 0),
            ("redis://[::1]:6381/3", "::1", 6381, nil, nil, 3),
            ("unix:///run/redis/redis%20server.sock", "/run/redis/redis server.sock", 0, nil, nil, 0),
        ] as [(String, String, Int, String?, String?, Int)])
    func parts(url: String, host: String, port: Int, user: String?, password: String?, database: Int) throws {
        let address = try RedisAddress(parsing: url)
        #expect(address.host == host)
        #expect(address.port == port)
        #expect(address.user == user.map { Array($0.utf8) })
        #expect(address.password == password.map { Array($0.utf8) })
        #expect(address.database == database)
        #expect(!address.description.contains("@"))
    }

    @Test(
        "the URL as messages show it: no user information, no password typed without its '@'",
        arguments: [
            ("redis://:secret@h:1/0", "redis://***@h:1/0"),
            ("redis://u:se/cret@h:1", "redis://***@h:1"),
            ("redis://h:secret/0", "redis://h:***/0"),
            ("redis://h:6379/0", "redis://h:6379/0"),
            ("redis://[::1]:6379", "redis://[::1]:6379"),
            ("redis:/:secret@h", "***"),
            ("unix:///run/redis.sock?password=secret", "unix:///run/redis.sock?***"),
            ("unix:///run/redis.sock", "unix:///run/redis.sock"),
        ])
    func redacted(url: String, shown: String) {
        #expect(RedisAddress.redacted(url) == shown)
    }

    @Test(
        "a query or fragment in a unix socket's URL is refused, its secret never shown (redis-py's ?password=)",
        arguments: ["unix:///run/redis.sock?password=secret", "unix:///run/redis.sock#secret"])
    func unixQuery(url: String) {
        do {
            _ = try RedisAddress(parsing: url)
            Issue.record("\(url) was accepted")
        } catch {
            #expect(error.detail.contains("percent-encoded"), "\(error.detail)")
            #expect(!error.detail.contains("secret"), "\(error.detail)")
        }
    }
}

/// Bytes given to a `RESPReader` a few at a time, as a socket might.
struct ChunkedSource: RESPSource {
    var bytes: [UInt8]
    var chunk: Int
    var offset = 0

    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(RedisError) -> Int {
        let count = min(chunk, buffer.count, bytes.count - offset)
        bytes.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + offset, byteCount: count) }
        offset += count
        return count
    }
}

/// Off the pool: its bodies read sockets that answer slowly, for seconds.
@Suite("Worker: entries read as their bytes arrive, each payload within its cap", .offPool)
struct StreamEntryReadingTests {
    /// RESP2: a bulk string.
    static func bulk(_ text: String) -> String { "$\(text.utf8.count)\r\n\(text)\r\n" }
    static func entry(_ id: String, _ fields: [String]) -> String {
        "*2\r\n" + bulk(id) + "*\(fields.count)\r\n" + fields.map(bulk).joined()
    }

    static let payload = String(repeating: "p", count: 100)
    /// An XREADGROUP reply: one stream, five entries: plain; fields in another order, with others, a long
    /// deadline and two payloads; over the limit; without a payload; deleted since delivered.
    static let reply =
        "*1\r\n*2\r\n" + bulk("in") + "*5\r\n"
        + entry("1-0", ["payload", payload, "deadline", "2.5"])
        + entry(
            "2-0", ["x", "y", "deadline", String(repeating: "9", count: 65), "payload", "first", "payload", "second"])
        + entry("3-0", ["payload", payload + "!"])
        + entry("4-0", ["not-payload", payload])
        + "*2\r\n" + bulk("5-0") + "*-1\r\n"

    static let expected = [
        StreamEntry(id: "1-0", payload: .bytes(Array(payload.utf8)), deadline: "2.5"),
        StreamEntry(id: "2-0", payload: .bytes(Array("first".utf8)), deadline: nil, oversizedDeadline: 65),
        StreamEntry(id: "3-0", payload: .tooLarge(101), deadline: nil),
        StreamEntry(id: "4-0", payload: .missing, deadline: nil),
        StreamEntry(id: "5-0", payload: .missing, deadline: nil),
    ]

    static func reader(_ text: String, chunk: Int) -> RESPReader<ChunkedSource> {
        // The smallest buffer the reader takes, so that values cross its end and it moves what it holds.
        RESPReader(ChunkedSource(bytes: Array(text.utf8), chunk: chunk), bufferSize: 0)
    }

    @Test(
        """
        XREADGROUP's entries, whatever the reads' sizes: the first payload within the limit, a longer one measured, a \
        short deadline
        """,
        arguments: [1, 2, 7, 100, 1 << 20])
    func streams(chunk: Int) throws {
        var reader = Self.reader(Self.reply, chunk: chunk)
        #expect(try reader.streamsReply(payloadLimit: 100, most: 5) == Self.expected)
        #expect(!reader.hasBufferedBytes)
    }

    @Test("XAUTOCLAIM's entries, its next id and deleted ids skipped; a null XREADGROUP reply is no entry")
    func autoclaim() throws {
        let text =
            "*3\r\n" + Self.bulk("0-0") + "*1\r\n" + Self.entry("1-0", ["payload", "p"]) + "*2\r\n" + Self.bulk("7-0")
            + Self.bulk("8-0")
        var reader = Self.reader(text, chunk: 3)
        let claimed = try reader.autoclaimReply(payloadLimit: 10, most: 1)
        #expect(claimed == [StreamEntry(id: "1-0", payload: .bytes([0x70]), deadline: nil)])
        #expect(!reader.hasBufferedBytes)
        var empty = Self.reader("*-1\r\n", chunk: 1)
        #expect(try empty.streamsReply(payloadLimit: 10, most: 1) == [])
    }

    @Test("a payload far over the limit is measured as it is read, a buffer at a time")
    func largePayloadSkipped() throws {
        let size = 8 << 20
        let head = Array(
            ("*1\r\n*2\r\n" + Self.bulk("in") + "*1\r\n*2\r\n" + Self.bulk("1-0") + "*2\r\n" + Self.bulk("payload")
                + "$\(size)\r\n").utf8)
        let bytes = head + [UInt8](repeating: 0x61, count: size) + [0x0D, 0x0A]
        var reader = RESPReader(ChunkedSource(bytes: bytes, chunk: 1 << 16), bufferSize: 0)
        let entries = try reader.streamsReply(payloadLimit: 1 << 20, most: 1)
        #expect(entries == [StreamEntry(id: "1-0", payload: .tooLarge(size), deadline: nil)])
    }

    @Test(
        "an error reply is the server's answer; a malformed or cut reply is the connection's failure",
        arguments: [
            ("-NOGROUP No such key 'in' or consumer group 'g'\r\n", RedisError.Kind.reply),
            ("*1\r\n*2\r\n$2\r\nin\r\n*1\r\n*2\r\n$3\r\n1-0", .connection),
            ("*1\r\n*2\r\n$2\r\nin\r\n*1\r\n*2\r\n$3\r\n1-0XX*-1\r\n", .connection),
            ("*1\n", .connection),
            ("*-2\r\n", .connection),
            ("*1\r\n*2\r\n$2\r\nin\r\n:5\r\n", .connection),
            ("?\r\n", .connection),
            ("$" + String(repeating: "1", count: 70_000) + "\r\n", .connection),
            // More entries than the one asked for: a server out of step could otherwise bring any number.
            ("*1\r\n*2\r\n$2\r\nin\r\n*2\r\n*2\r\n$3\r\n1-0\r\n*-1\r\n*2\r\n$3\r\n2-0\r\n*-1\r\n", .connection),
            // Lengths and counts far beyond any Redis sends: refused, never summed into an overflow.
            (
                "*1\r\n*2\r\n$2\r\nin\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nx\r\n"
                    + String(repeating: "*999999999999999999\r\n", count: 10), .connection
            ),
        ])
    func failures(text: String, kind: RedisError.Kind) {
        var reader = Self.reader(text, chunk: 5)
        let thrown = #expect(throws: RedisError.self) { try reader.streamsReply(payloadLimit: 10, most: 1) }
        #expect(thrown?.kind == kind)
    }

    @Test("nested counts each within the limit are refused once their sum to skip passes it (millions had trapped)")
    func skippedCountsSummed() {
        let text =
            "*1\r\n*2\r\n$2\r\nin\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nx\r\n"
            + String(repeating: "*1099511627776\r\n", count: 3)
        var reader = Self.reader(text, chunk: 5)
        let thrown = #expect(throws: RedisError.self) { try reader.streamsReply(payloadLimit: 10, most: 1) }
        #expect(thrown?.kind == .connection)
        let detail = thrown?.detail ?? ""
        #expect(detail.contains("a reply of over 1099511627776 values"), "\(detail)")
    }

    @Test(
        """
        a large reply that keeps coming (64 KiB and more each window) is read whole however long it takes: 700 KB in \
        70 KB pieces 150 ms apart, over a 400 ms window
        """)
    func slowLargeReply() throws {
        var ends: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        defer { close(ends[0]) }
        let writer = ends[1]
        let payload = String(repeating: "p", count: 700_000)
        let reply = Array(("*1\r\n*2\r\n" + Self.bulk("in") + "*1\r\n" + Self.entry("1-0", ["payload", payload])).utf8)
        Thread.detachNewThread {
            var offset = 0
            while offset < reply.count {
                let piece = min(70_000, reply.count - offset)
                let sent = reply[offset..<(offset + piece)].withUnsafeBytes { send(writer, $0.baseAddress, piece, 0) }
                guard sent > 0 else { break }
                offset += sent
                usleep(150_000)
            }
            close(writer)
        }
        var reader = RESPReader(SocketSource(descriptor: ends[0], window: .milliseconds(400)))
        let start = ContinuousClock.now
        let entries = try reader.streamsReply(payloadLimit: 1 << 20, most: 1)
        #expect(entries.map(\.id) == ["1-0"])
        #expect(ContinuousClock.now - start > .milliseconds(400), "longer than one window")
    }

    /// Writes `reply` (its first 60 bytes) on `connection` a byte every 150 ms, after reading the request.
    static func trickle(_ reply: String, on connection: Int32) {
        var request = [UInt8](repeating: 0, count: 4_096)
        _ = recv(connection, &request, request.count, 0)
        for byte in Array(reply.utf8).prefix(60) {
            guard send(connection, [byte], 1, Int32(MSG_NOSIGNAL)) == 1 else { return }
            usleep(150_000)
        }
    }

    @Test(
        """
        a reply trickled a byte at a time, each within the socket's timeout, is cut at the reply's deadline: the \
        entries' reader and hiredis's commands (at most 60 bytes, 150 ms apart)
        """)
    func trickledReply() throws {
        // The entries' reader, on one end of a socket pair.
        var ends: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        defer { close(ends[0]) }
        let writer = ends[1]
        let reply = "*1\r\n*2\r\n$2\r\nin\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$7\r\npayload\r\n$5\r\nhello\r\n"
        _ = send(ends[0], "x", 1, 0)
        Thread.detachNewThread {
            Self.trickle(reply, on: writer)
            close(writer)
        }
        var reader = RESPReader(SocketSource(descriptor: ends[0], window: .milliseconds(400)))
        let start = ContinuousClock.now
        let thrown = #expect(throws: RedisError.self) { try reader.streamsReply(payloadLimit: 10, most: 1) }
        #expect(thrown?.detail.contains("timed out") == true, "\(String(describing: thrown))")
        #expect(ContinuousClock.now - start < .seconds(5), "cut near its deadline, not when the server ended")

        // hiredis's commands, against a listener trickling `+PONG` and more.
        let (listener, port) = try loopbackSocket()
        #expect(listen(listener, 4) == 0)
        defer {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }
        Thread.detachNewThread {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            Self.trickle("+PONG" + String(repeating: "G", count: 50) + "\r\n", on: connection)
            close(connection)
        }
        let connection = RedisConnection(
            try RedisAddress(parsing: "redis://127.0.0.1:\(port)"), timeout: .milliseconds(400))
        let commandStart = ContinuousClock.now
        let failed = #expect(throws: RedisError.self) { try connection.run(["PING"]) }
        #expect(failed?.detail.contains("timed out") == true, "\(String(describing: failed))")
        #expect(ContinuousClock.now - commandStart < .seconds(5), "cut near its deadline, not when the server ended")
    }
}

@Suite("Worker: a claim's entries")
struct WorkerClaimTests {
    @Test(
        """
        entries idle past --claim-idle and delivered more than --max-deliveries times are dead-lettered unread: \
        claimed by id alone, their payload copied by the server; the others are left pending
        """)
    func overdeliveredUnread() async throws {
        let redis = try RedisServer(password: WorkerTests.password)
        let admin = redis.client()
        try admin.run(["XGROUP", "CREATE", "in", "g", "$", "MKSTREAM"])
        let ids = try (0..<3).map { try redis.add("in", [("payload", #"{"n":\#($0)}"#)]) }
        _ = try admin.run(["XREADGROUP", "GROUP", "g", "gone", "COUNT", "3", "STREAMS", "in", ">"])
        // Delivered 5, 3 and 4 times (an entry whose every claim was cut counts a delivery each time).
        for (id, count) in zip(ids, [5, 3, 4]) {
            _ = try admin.run(["XCLAIM", "in", "g", "gone", "0", id, "RETRYCOUNT", String(count), "JUSTID"])
        }
        var settings = StreamWorker.Settings(
            redis: try RedisAddress(parsing: "unix://" + redis.socketPath), stream: "in", group: "g", output: "out",
            consumer: "a", deadLetter: "in:dead")
        settings.redis.password = Array(WorkerTests.password.utf8)
        settings.maximumDeliveries = 3
        // Not idle long enough: nothing.
        settings.claimIdle = .seconds(3600)
        #expect(
            try ConsumerGroup(settings: settings, payloadLimit: 1 << 20, log: { _ in }).deadLetterOverdelivered(
                redis.client()) == 0)
        settings.claimIdle = .zero
        let group = ConsumerGroup(settings: settings, payloadLimit: 1 << 20, log: { _ in })
        #expect(try group.deadLetterOverdelivered(redis.client()) == 2)
        let dead = try admin.run(["XRANGE", "in:dead", "-", "+"]).elements.map { entry in
            let fields = entry.elements.last?.elements.compactMap(\.text) ?? []
            return Dictionary(
                uniqueKeysWithValues: stride(from: 0, to: fields.count - 1, by: 2).map {
                    (fields[$0], fields[$0 + 1])
                })
        }
        #expect(dead.map { $0["source"] } == [ids[0], ids[2]])
        #expect(dead.map { $0["payload"] } == [#"{"n":0}"#, #"{"n":2}"#])
        #expect(
            dead.map { $0["reason"] } == [
                "delivered 5 times without a result (dead-lettered unread)",
                "delivered 4 times without a result (dead-lettered unread)",
            ])
        #expect(dead.map { $0["deliveries"] } == ["5", "4"])
        let pending = try admin.run(["XPENDING", "in", "g", "-", "+", "10"]).elements
        #expect(pending.map { $0.elements.first?.text } == [ids[1]], "only the entry delivered 3 times left")
        #expect(pending.first?.elements[1].text == "gone")
    }

    @Test(
        """
        the look for entries pending for this consumer that it never received: the ids in flight and other \
        consumers' entries left out, up to its count, a delivery counted, complete once all were found; an entry \
        deleted since is left (Redis 7 drops it from the pending entries)
        """)
    func unseenEntries() throws {
        let redis = try RedisServer()
        let admin = redis.client()
        try admin.run(["XGROUP", "CREATE", "in", "g", "$", "MKSTREAM"])
        let ids = try (0..<4).map { _ in try redis.add("in", [("payload", "{}")]) }
        _ = try admin.run(["XREADGROUP", "GROUP", "g", "a", "COUNT", "4", "STREAMS", "in", ">"])
        _ = try redis.add("in", [("payload", "{}")])
        _ = try admin.run(["XREADGROUP", "GROUP", "g", "other", "COUNT", "1", "STREAMS", "in", ">"])
        try admin.run(["XDEL", "in", ids[3]])
        var settings = StreamWorker.Settings(
            redis: try RedisAddress(parsing: "unix://" + redis.socketPath), stream: "in", group: "g", output: "out",
            consumer: "a", deadLetter: "in:dead")
        settings.redis.password = redis.password.map { Array($0.utf8) }
        let group = ConsumerGroup(settings: settings, payloadLimit: 1 << 20, log: { _ in })
        var handed: [(id: String, deliveries: Int)] = []
        var claiming: [String?] = []
        func look(known: Set<String>, count: Int) throws -> Bool {
            try group.recoverUnseen(
                redis.client(), known: known, count: count, claiming: { claiming.append($0) },
                each: { handed.append(($0.id, $1)) }, deadLettered: { Issue.record("\($0) dead-lettered") })
        }
        // Ids in flight that are no longer pending make the look longer, not complete: 2 unseen for 1 asked.
        #expect(try look(known: [ids[0], "9-1", "9-2"], count: 1) == false, "more remain")
        #expect(handed.map(\.id) == [ids[1]])
        #expect(handed.map(\.deliveries) == [2])
        #expect(claiming == [ids[1], nil], "each claim's id told before, nil after")
        let counted = try admin.run(["XPENDING", "in", "g", ids[1], ids[1], "1"]).elements.first?.elements
        #expect(counted?.dropFirst(3).first == .integer(2), "the delivery is counted by Redis too")
        #expect(try look(known: [ids[0], ids[1]], count: 4))
        #expect(handed.map(\.id) == [ids[1], ids[2]])
        // Redis 7 drops the deleted entry at its XCLAIM (Redis 6.2 would hand it over without payload).
        #expect(try redis.consumers("in", "g")["a"]?.pending == 3, "the deleted entry is no longer pending")
        #expect(try look(known: Set(ids.prefix(3)), count: 4))
        #expect(handed.count == 2, "nothing more to take")
        // One delivered --max-deliveries times (3) already is dead-lettered unread, its payload not sent again.
        let poison = try redis.add("in", [("payload", "{}")])
        _ = try admin.run(["XREADGROUP", "GROUP", "g", "a", "COUNT", "1", "STREAMS", "in", ">"])
        try admin.run(["XCLAIM", "in", "g", "a", "0", poison, "RETRYCOUNT", "3", "JUSTID"])
        var letters: [String] = []
        let done = try group.recoverUnseen(
            redis.client(), known: Set(ids.prefix(3)), count: 4, each: { entry, _ in handed.append((entry.id, 0)) },
            deadLettered: { letters.append($0) })
        #expect(done)
        #expect(letters == [poison])
        #expect(handed.count == 2)
        let letter = try #require(try redis.entries("in:dead").first)
        #expect(letter.fields["source"] == poison)
        #expect(letter.fields["reason"] == "delivered 3 times without a result (dead-lettered unread)")
    }

    @Test(
        """
        a claim whose XPENDING fails still hands over every entry XAUTOCLAIM gave this consumer, as delivered twice, \
        then throws: they waited another --claim-idle before
        """)
    func pendingCountFails() async throws {
        let redis = try RedisServer(
            password: WorkerTests.password,
            arguments: ["--user", "worker", "on", ">secret", "~*", "&*", "+@all", "-xpending"])
        let admin = redis.client()
        try admin.run(["XGROUP", "CREATE", "in", "g", "$", "MKSTREAM"])
        let ids = try (0..<3).map { _ in try redis.add("in", [("payload", "{}")]) }
        // Delivered to another consumer, pending for it: claimable at once with an idle time of 0.
        _ = try admin.run(["XREADGROUP", "GROUP", "g", "gone", "COUNT", "3", "STREAMS", "in", ">"])
        var address = try RedisAddress(parsing: "redis://127.0.0.1:\(redis.port)")
        address.user = Array("worker".utf8)
        address.password = Array("secret".utf8)
        var settings = StreamWorker.Settings(
            redis: address, stream: "in", group: "g", output: "out", consumer: "a", deadLetter: "in:dead")
        settings.claimIdle = .zero
        let group = ConsumerGroup(settings: settings, payloadLimit: 1 << 20, log: { _ in })
        var handed: [(String, Int)] = []
        var claimed = 0
        let failure = #expect(throws: RedisError.self) {
            try group.claim(
                RedisConnection(address, timeout: .seconds(5)), count: 10, claimed: { claimed = $0 },
                each: { handed.append(($0.id, $1)) })
        }
        #expect(failure?.detail.contains("xpending") == true, "\(String(describing: failure))")
        #expect(claimed == 3)
        #expect(handed.map(\.0) == ids)
        #expect(handed.map(\.1) == [2, 2, 2])
        // And with XPENDING allowed, each entry's own count: read once, claimed twice now.
        var counted: [Int] = []
        settings.redis = try RedisAddress(parsing: "unix://" + redis.socketPath)
        settings.redis.password = Array(WorkerTests.password.utf8)
        try ConsumerGroup(settings: settings, payloadLimit: 1 << 20, log: { _ in }).claim(
            redis.client(), count: 10, claimed: { _ in }, each: { counted.append($1) })
        #expect(counted == [3, 3, 3])
    }
}
