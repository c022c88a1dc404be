import FixtureOrigin
import Foundation
import Testing

@testable import RichPush

/// The retry policy's decisions, without I/O.
@Suite("Retry policy: what is fetched again, and when")
struct RetryPolicyTests {
    let start = ContinuousClock.now
    var policy: RetryPolicy {
        var policy = RetryPolicy()
        policy.jitterSeed = 42
        return policy
    }

    func decide(
        _ failure: FetchFailure, attempt: Int = 1, timeLeft: Duration = .seconds(25), policy: RetryPolicy? = nil
    ) -> RetryPolicy.Decision {
        (policy ?? self.policy).decision(
            after: failure, attempt: attempt, url: "https://cdn.example/a.jpg", now: start, deadline: start + timeLeft,
            wallClock: 1_800_000_000)
    }

    @Test(
        "transient failures are retried; everything else is reported at once",
        arguments: [
            (FetchFailure(.network, "refused", cause: .connectionRefused), true),
            (FetchFailure(.network, "reset", cause: .connectionDropped), true),
            (FetchFailure(.timeout, "connect", cause: .connectTimeout), true),
            (FetchFailure(.httpStatus, "HTTP 502", cause: .status(502, retryAfter: nil)), true),
            (FetchFailure(.httpStatus, "HTTP 503", cause: .status(503, retryAfter: nil)), true),
            (FetchFailure(.httpStatus, "HTTP 504", cause: .status(504, retryAfter: nil)), true),
            (FetchFailure(.httpStatus, "HTTP 429", cause: .status(429, retryAfter: nil)), true),
            (FetchFailure(.httpStatus, "HTTP 404", cause: .status(404, retryAfter: nil)), false),
            (FetchFailure(.httpStatus, "HTTP 500", cause: .status(500, retryAfter: nil)), false),
            (FetchFailure(.httpStatus, "HTTP 403", cause: .status(403, retryAfter: nil)), false),
            (FetchFailure(.timeout, "too slow"), false),
            (FetchFailure(.network, "could not resolve"), false),
            (FetchFailure(.blockedAddress, "127.0.0.1 is loopback"), false),
            (FetchFailure(.blockedPort, "port 22"), false),
            (FetchFailure(.unsupportedType, "text/html"), false),
            (FetchFailure(.tooLarge, "more than 10000000 bytes"), false),
            (FetchFailure(.expired, "deadline"), false),
            (FetchFailure(.cancelled, "cancelled"), false),
        ])
    func classes(failure: FetchFailure, retried: Bool) {
        if case .retry = decide(failure) { #expect(retried) } else { #expect(!retried) }
    }

    @Test("attempts are bounded by retries: with 2, the third failure is reported")
    func bounded() {
        let refused = FetchFailure(.network, "refused", cause: .connectionRefused)
        #expect(decide(refused, attempt: 2) != .stop)
        #expect(decide(refused, attempt: 3) == .stop)
        var none = policy
        none.retries = 0
        #expect(decide(refused, attempt: 1, policy: none) == .stop)
    }

    @Test("backoff doubles up to its cap, half fixed and half jitter; the same seed gives the same waits")
    func backoff() {
        let waits = (1...8).map { policy.backoff(attempt: $0, url: "https://cdn.example/a.jpg") }
        let bases: [Duration] = [
            .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(4), .seconds(4),
            .seconds(4),
        ]
        for (wait, base) in zip(waits, bases) {
            #expect(wait >= base / 2 && wait < base, "\(wait) for a base of \(base)")
        }
        #expect(waits == (1...8).map { policy.backoff(attempt: $0, url: "https://cdn.example/a.jpg") })
        var other = policy
        other.jitterSeed = 7
        #expect(waits != (1...8).map { other.backoff(attempt: $0, url: "https://cdn.example/a.jpg") })
        // Another URL gets other jitter under the same seed: payloads that failed together spread out.
        #expect(waits != (1...8).map { policy.backoff(attempt: $0, url: "https://cdn.example/b.jpg") })
    }

    @Test("Retry-After is honoured when it fits in the time left, else the failure is reported at once")
    func retryAfter() {
        func limited(_ value: String) -> FetchFailure {
            FetchFailure(.httpStatus, "HTTP 429", cause: .status(429, retryAfter: value))
        }
        #expect(decide(limited("3")) == .retry(after: .seconds(3)))
        #expect(decide(limited("3"), timeLeft: .seconds(3)) == .stop)
        #expect(decide(limited("3600")) == .stop)
        #expect(decide(limited("99999999999999999999999")) == .stop)
        // An HTTP date 5 s after the wall clock given.
        #expect(decide(limited("Fri, 15 Jan 2027 08:00:05 GMT")) == .retry(after: .seconds(5)))
        // A value that is neither: the backoff.
        if case .retry(let wait) = decide(limited("soon")) {
            #expect(wait < .milliseconds(250))
        } else {
            Issue.record("not retried")
        }
    }

    @Test(
        "HTTP dates as RFC 9110 writes them",
        arguments: [
            ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777 as Int64?), ("Fri, 15 Jan 2027 08:00:00 GMT", 1_800_000_000),
            ("Thu, 01 Jan 1970 00:00:00 GMT", 0), ("Sunday, 06-Nov-94 08:49:37 GMT", nil), ("06 Nov 1994", nil),
            ("Sun, 06 Nov 1994 25:49:37 GMT", nil),
        ])
    func httpDates(text: String, seconds: Int64?) {
        #expect(RetryPolicy.httpDate(text) == seconds)
    }
}

/// Retries against the loopback origin: routes that fail the first requests, drop connections, answer 429.
@Suite("Retries inside the deadline, against the loopback origin")
struct RetryTests {
    // Deadlines here are 30 s, not what is tested: retries are, and a deadline only stops them early. With helpers
    // building beside a full run (load 8 on two cores) the first tests of the run took 14 s, and 10 s deadlines
    // cut the retries of six tests short.
    func bed(retries: Int = 2) throws -> TestBed {
        try TestBed { configuration in
            configuration.retry.retries = retries
            configuration.retry.initialBackoff = .milliseconds(20)
            configuration.retry.minimumTimeLeft = .milliseconds(200)
            configuration.retry.jitterSeed = 1
        }
    }

    func enrich(_ path: String, on bed: TestBed, timeout: Duration = .seconds(30)) async throws -> EnrichmentResult {
        try await withEnricher(bed.configuration) { enricher in
            await enricher.enrich(TestBed.adobePayload(bed.url(path)), timeout: timeout)
        }
    }

    func requests(_ bed: TestBed, _ path: String) -> Int { bed.origin.requestLog.filter { $0 == path }.count }

    @Test(
        "a transient failure, then the file: attached after the retries it took",
        arguments: [
            "/fail-first/2/503/photo.jpg", "/fail-first/1/502/photo.jpg", "/fail-first/2/504/photo.jpg",
            "/fail-first/1/429/photo.jpg", "/drop-first/2/photo.jpg", "/drop-first/1/photo.jpg?reset=1",
        ])
    func recovers(path: String) async throws {
        let bed = try bed()
        let result = try await enrich(path, on: bed)
        #expect(result.outcome == .complete, "\(result.problems)")
        let failures = Int(path.split(separator: "/")[1])!
        #expect(result.attachments.first?.attempts == failures + 1)
        #expect(requests(bed, path) == failures + 1)
    }

    @Test("retries are bounded: the last failure is reported with its attempts")
    func exhausted() async throws {
        let bed = try bed(retries: 2)
        let path = "/fail-first/9/503/photo.jpg"
        let result = try await enrich(path, on: bed)
        #expect(result.outcome == .failed)
        #expect(result.problems.map(\.code) == [.httpStatus])
        #expect(result.problems.first?.attempts == 3)
        #expect(requests(bed, path) == 3)
        // --retries 0: one attempt.
        let once = try self.bed(retries: 0)
        let single = try await enrich(path, on: once)
        #expect(single.problems.first?.attempts == 1)
        #expect(requests(once, path) == 1)
    }

    @Test(
        "never retried: other statuses, policy, type and size refusals",
        arguments: [
            "/status/404", "/status/500", "/media/error-page.html", "/generated?bytes=10000001&prefix=photo.jpg",
        ])
    func notRetried(path: String) async throws {
        let bed = try bed()
        let result = try await enrich(path, on: bed)
        #expect(result.outcome == .failed)
        #expect(result.problems.first?.attempts == 1)
        #expect(requests(bed, path) == 1)
    }

    @Test(
        """
        a malformed answer is bad-response, asked for once: a chunked body without its size, a head line over \
        libcurl's 100 KB bound, a Transfer-Encoding not asked for (refused at its header, nothing decoded), two \
        Content-Lengths that differ (libcurl took the last)
        """,
        arguments: [
            ("Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", "in chunked-encoding"),
            ("Content-Length: 3\r\nContent-Length: 6\r\n\r\nabcdef", "two Content-Length headers say 3 and 6"),
            ("X-Big: \(String(repeating: "x", count: 120_000))\r\nContent-Length: 3\r\n\r\nabc", "100 KB"),
            ("Transfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "only chunked"),
        ])
    func malformedAnswer(rest: String, detail: String) async throws {
        let answer = Array(("HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\n" + rest).utf8)
        let origin = try HTTPOrigin { _ in HTTPOrigin.Response(body: .raw(answer)) }
        defer { origin.stop() }
        let bed = try bed(retries: 2)
        let result = try await withEnricher(bed.configuration) { enricher in
            await enricher.enrich(TestBed.adobePayload(origin.url("/x.jpg")), timeout: .seconds(30))
        }
        #expect(result.problems.map(\.code) == [.badResponse], "\(result.problems)")
        #expect(result.problems.first?.detail.contains(detail) == true, "\(result.problems)")
        #expect(result.problems.first?.attempts == 1)
        #expect(origin.exchanges.count == 1)
        #expect(bed.entriesOnDisk().isEmpty)
    }

    @Test("a refused connection is retried; a refused address is not")
    func refused() async throws {
        let closed = try RefusingPort()
        let port = closed.port
        defer { withExtendedLifetime(closed) {} }
        let bed = try bed(retries: 2)
        let refused = try await withEnricher(bed.configuration) { enricher in
            await enricher.enrich(
                TestBed.adobePayload("http://127.0.0.1:\(port)/media/photo.jpg"), timeout: .seconds(30))
        }
        #expect(refused.problems.map(\.code) == [.network])
        #expect(refused.problems.first?.attempts == 3)
        let blocked = try await withEnricher(bed.configuration) { enricher in
            await enricher.enrich(
                TestBed.adobePayload("http://127.0.0.2:\(bed.origin.port)/media/photo.jpg"), timeout: .seconds(30))
        }
        #expect(blocked.problems.map(\.code) == [.blockedAddress])
        #expect(blocked.problems.first?.attempts == 1)
    }

    @Test("a connect timeout is retried; the timeout is reported with its attempts", .offPool)
    func connectTimeout() async throws {
        let listener = try FullListener()
        let bed = try TestBed { configuration in
            configuration.retry.retries = 2
            configuration.retry.initialBackoff = .milliseconds(20)
            configuration.retry.minimumTimeLeft = .milliseconds(200)
            configuration.network.connectTimeout = .milliseconds(300)
        }
        let result = try await withEnricher(bed.configuration) { enricher in
            await enricher.enrich(
                TestBed.adobePayload("http://127.0.0.1:\(listener.port)/photo.jpg"), timeout: .seconds(30))
        }
        withExtendedLifetime(listener) {}
        #expect(result.problems.map(\.code) == [.timeout])
        #expect(result.problems.first?.attempts == 3, "\(result.problems)")
    }

    @Test("a Retry-After beyond the deadline is reported at once; one within it is waited for")
    func retryAfter() async throws {
        let bed = try bed()
        let far = "/fail-first/1/429/photo.jpg?retry-after=3600"
        let limited = try await enrich(far, on: bed)
        // Waiting would have run into the 30 s deadline and ended `expired`; the result's own clock (engine start
        // and shutdown left out, which took seconds under the full suite) says it did not wait.
        #expect(limited.problems.map(\.code) == [.httpStatus])
        #expect(limited.problems.first?.attempts == 1)
        #expect(limited.elapsed < .seconds(20), "waited for a Retry-After that could not fit: \(limited.elapsed)")
        let near = "/fail-first/1/503/photo.jpg?retry-after=1"
        let waited = try await enrich(near, on: bed)
        #expect(waited.outcome == .complete)
        #expect(waited.attachments.first?.attempts == 2)
        let exchanges = bed.origin.exchanges.filter { $0.target == near }
        #expect(exchanges.count == 2)
        if exchanges.count == 2 {
            // The server asked for a second; the retry came no sooner.
            #expect(exchanges[1].received - exchanges[0].received >= .seconds(1))
        }
    }

    @Test(
        """
        a payload waiting out a Retry-After when the drain's deadline comes is cut then, as a transfer is: the \
        shutdown keeps its bound, the payload ends cancelled without its retry (shutdown and syncShutdown)
        """
    )
    func drainCutsRetryWait() async throws {
        for synchronous in [false, true] {
            let handler = RecordingLogHandler(minimumLevel: .info)
            let bed = try TestBed { configuration in
                configuration.retry.retries = 2
                configuration.logHandler = handler
            }
            let path = "/fail-first/1/503/photo.jpg?retry-after=40&sync=\(synchronous)"
            let enricher = try Enricher(configuration: bed.configuration)
            let work = Task { await enricher.enrich(TestBed.adobePayload(bed.url(path)), timeout: .seconds(60)) }
            // The event that shows the wait has begun: the retry is announced as it starts.
            try await waitUntil("the retry announced", within: .seconds(30)) { handler.names.contains(.retry) }
            let began = ContinuousClock.now
            if synchronous {
                try await offPool { enricher.syncShutdown() }
            } else {
                await enricher.shutdown(drainTimeout: .milliseconds(100))
            }
            let result = await work.value
            // Waiting out the Retry-After would take 40 s; the cut comes at once (a bound for a loaded machine).
            #expect(ContinuousClock.now - began < .seconds(20), "synchronous: \(synchronous)")
            #expect(result.outcome == .cancelled)
            #expect(result.problems.first?.code == .cancelled)
            #expect(result.problems.first?.detail.contains("waiting to retry") == true, "\(result.problems)")
            #expect(requests(bed, path) == 1)
        }
    }

    @Test("retries stop while the deadline leaves room: the failure, not expired, before the deadline")
    func withinDeadline() async throws {
        // Four seconds of room for the last attempt: a 503 on loopback takes milliseconds alone, but a second was
        // not enough in a full run beside helpers' builds (load 7-15: the last attempt ran into the deadline).
        let bed = try TestBed { configuration in
            configuration.retry.retries = 10
            configuration.retry.initialBackoff = .milliseconds(400)
            configuration.retry.minimumTimeLeft = .seconds(4)
            configuration.retry.jitterSeed = 3
        }
        let path = "/fail-first/99/503/photo.jpg"
        let (result, control, arrived) = try await withEnricher(bed.configuration) { enricher in
            // The deadline starts once the engine is up (loading libmagic is slow on a loaded machine).
            let deadline = ContinuousClock.now + .seconds(10)
            let control = DeadlineControl(at: deadline)
            let result = await enricher.enrich(TestBed.adobePayload(bed.url(path)), deadline: deadline)
            return (result, control, ContinuousClock.now)
        }
        await control.expectOnTime(arrived)
        #expect(result.outcome == .failed)
        #expect(result.problems.map(\.code) == [.httpStatus])
        let attempts = try #require(result.problems.first?.attempts)
        // Waits of 0.2-0.4 s, 0.4-0.8 s, 0.8-1.6 s, 1.6-3.2 s, then 2-4 s (the 4 s cap), each needing four seconds
        // left after it: four to six attempts fit in 10 s unloaded, as the jitter draws (hashed from the URL, whose
        // port changes every run: six when the first five waits are short, 5.0 s in all; a seventh would need 7 s
        // plus four); under the full suite on a shared machine a first attempt took over 2.5 s (measured), leaving
        // room for fewer, so the bound is on the other side: never the eleven the retries allow.
        // That retries happen at all is the other tests' to show.
        #expect((1...6).contains(attempts), "\(attempts) attempts")
        #expect(requests(bed, path) == attempts)
    }

    @Test("the CLI takes --retries; attempts are in the output of attachments and problems")
    func cli() async throws {
        let bed = try TestBed()
        let payload =
            #"{"aps":{"mutable-content":1},"adb_media":"\#(bed.url("/drop-first/1/photo.jpg"))","#
            + #""fcm_options":{"image":"\#(bed.url("/status/404"))"}}"#
        let run = try await CLI.run(["enrich"] + bed.cliOptions, stdin: payload)
        let line = try #require(run.lines.first)
        let attachments = line["attachments"] as? [[String: Any]]
        let problems = line["problems"] as? [[String: Any]]
        #expect(attachments?.first?["attempts"] as? Int == 2)
        #expect(problems?.first?["attempts"] as? Int == 1)
        let none = try await CLI.run(
            ["enrich", "--retries", "0"] + bed.cliOptions,
            stdin: payload.replacingOccurrences(of: "drop-first/1", with: "drop-first/5"))
        let first = try #require(none.lines.first)
        #expect(((first["problems"] as? [[String: Any]])?.first)?["attempts"] as? Int == 1)
        let bad = try await CLI.run(["enrich", "--retries", "11"] + bed.cliOptions, stdin: payload)
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("--retries"))
    }
}

/// A loopback listener that never accepts, its queue filled by connections of its own: the kernel drops later
/// SYNs, so a connection to it waits until the client's connect timeout (curl: "Timeout was reached").
final class FullListener {
    let port: Int
    private var descriptors: [Int32] = []

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(listener >= 0)
        descriptors.append(listener)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 0) == 0
                    && getsockname(listener, pointer, &length) == 0
            }
        }
        try #require(bound)
        port = Int(UInt16(bigEndian: address.sin_port))
        // Fill the accept queue (backlog 0 holds one) and the handshake in flight behind it.
        for _ in 0..<3 {
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            descriptors.append(client)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) }
            }
        }
        usleep(200_000)
    }

    deinit { for descriptor in descriptors { close(descriptor) } }
}
