import Foundation
import Testing

/// What one request may hold of `richpush serve`: an NDJSON batch whose client does not read, or goes; uploads
/// against `--max-in-flight`. Against the real binary on loopback, observed through `/metrics` and `/proc`.
@Suite(.serialized)
struct ServeLimitsTests {
    /// An NDJSON request's head for a body of `length` bytes.
    static func ndjsonHead(_ length: Int, id: String) -> [UInt8] {
        Array(
            ("POST /v1/enrich HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nX-Request-Id: \(id)\r\n"
                + "Content-Length: \(length)\r\n\r\n").utf8)
    }

    /// `count` lines that are not JSON: each an `invalid` result of about 220 bytes, made without any fetch.
    static func invalidLines(_ count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 2 * count) { buffer, initialized in
            for index in 0..<count {
                buffer[2 * index] = UInt8(ascii: "x")
                buffer[2 * index + 1] = 0x0A
            }
            initialized = 2 * count
        }
    }

    /// `count` lines of a 50 KB payload without media: each an `unchanged` result that repeats it, made without
    /// any fetch. Large results fill the sockets with less than half the server's work that short ones take (0.33 s of
    /// CPU for 5 MB of results, against 0.75 s with 220-byte ones), which spares the suites that run beside it.
    static func largeLines(_ count: Int) -> [UInt8] {
        let line =
            Array(#"{"aps":{"alert":"hi"},"pad":""#.utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: 50_000)
            + Array("\"}\n".utf8)
        var lines: [UInt8] = []
        lines.reserveCapacity(line.count * count)
        for _ in 0..<count { lines += line }
        return lines
    }

    /// The most bytes a TCP socket's send buffer grows to (tcp_wmem's third field; 4 MiB by default).
    static func sendBufferMaximum() -> Int {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/tcp_wmem", encoding: .utf8)) ?? ""
        return text.split(whereSeparator: \.isWhitespace).last.flatMap { Int($0) } ?? 4 << 20
    }

    @Test(
        """
        NDJSON: a client that does not read holds its batch (bounded memory, no more lines taken); one that goes \
        cancels it
        """
    )
    func unreadBatch() async throws {
        let bed = try TestBed()
        let server = try await ServeProcess(bed.cliOptions)
        let startRSS = try server.residentBytes()
        // A thousand lines of 50 KB: their results are 50 MB, far beyond what the sockets hold (a few MB).
        let lines = 1000
        let body = Self.largeLines(lines)
        let stuck = try HTTPConnection(port: server.port, receiveBuffer: 4096)
        try await offPool { try stuck.send(Self.ndjsonHead(body.count, id: "stuck") + body) }
        try await waitUntil("the batch to be held for its client", within: .seconds(60), every: .milliseconds(50)) {
            try server.metric("richpush_responses_held") == 1
        }
        let processed = try server.metric("richpush_payloads_total")
        let buffered = try server.metric("richpush_response_buffered_bytes")
        // What waits: the stream's 256 KiB, and the results of the lines taken before it filled and not yet written
        // to it: those in progress then (at most `--concurrency`, 32, of 50 KB), and those done behind one of them,
        // held for the input order (the pipeline starts up to its window past the oldest not yet written). On a
        // loaded machine one line preempted while the next ones finish adds a few (seen: 35 results in all, 2.0 MB);
        // two rounds of the concurrency allow for that. A route that took lines without room would hold most of
        // the 50 MB of results.
        #expect(buffered <= 256 * 1024 + 2 * 32 * 51_000, "\(buffered) bytes of results wait for the client")
        #expect(processed < lines / 4, "\(processed) of \(lines) lines were processed for a client that reads nothing")

        // Another batch runs to its end meanwhile: the engine had the time to go on with the held one, and did not.
        let other = 2000
        let reply = try await offPool {
            let connection = try HTTPConnection(port: server.port)
            try connection.send(Self.ndjsonHead(2 * other, id: "other") + Self.invalidLines(other))
            return try connection.readResponse(within: .seconds(60))
        }
        #expect(reply.lines.count == other)
        // Held again (the kernel may have taken more of its results meanwhile: a loopback socket's send buffer grows
        // by autotuning, up to tcp_wmem's maximum, and each byte it takes frees the stream for a moment).
        try await waitUntil("the batch to be held again", within: .seconds(60), every: .milliseconds(50)) {
            try server.metric("richpush_responses_held") == 1
        }
        let after = try server.metric("richpush_payloads_total")
        // The lines in progress when the stream filled may have ended since (at most `--concurrency`, 32), and the
        // results the kernel's send buffer took as it grew (a full run at load 11 went on for 49 lines).
        let kernel = Self.sendBufferMaximum() / 50_000
        #expect(
            after - processed - other <= 32 + kernel,
            "the held batch went on: \(after - processed - other) more lines (bound \(32 + kernel))")
        // The body (50 MB, held while its lines run) and what waits; all the results would be 50 MB more.
        let rss = try server.residentBytes()
        #expect(rss < startRSS + 80 << 20, "the server grew from \(startRSS >> 20) MiB to \(rss >> 20) MiB")

        // The client goes: the batch is cancelled, its slot freed, and no more of its lines processed.
        stuck.disconnect()
        try await waitUntil("the batch to be cancelled", within: .seconds(30), every: .milliseconds(50)) {
            try server.metric("richpush_in_flight") == 0
        }
        #expect(try server.metric("richpush_response_buffered_bytes") == 0)
        #expect(try server.metric("richpush_payloads_total") - after <= 32)
        withExtendedLifetime(stuck) {}
        #expect(try await server.terminate() == 0)
    }

    @Test(
        """
        uploads count against --max-in-flight: past the last slot, 503 before the body is read; a slot frees when its \
        upload ends
        """
    )
    func uploadsTakeSlots() async throws {
        let bed = try TestBed()
        let server = try await ServeProcess(bed.cliOptions + ["--max-in-flight", "3"])
        // Three uploads that send 10 bytes of a 1 MB body and stop.
        let uploads = try (0..<3).map { _ in
            let connection = try HTTPConnection(port: server.port)
            try connection.send(
                Array("POST /v1/enrich HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n{\"aps\":{}}".utf8))
            return connection
        }
        try await waitUntil("three uploads admitted") { try server.metric("richpush_in_flight") == 3 }
        // The fourth announces a body and sends none of it: it is answered from its headers alone.
        let refused = try await offPool {
            let connection = try HTTPConnection(port: server.port)
            try connection.send(Array("POST /v1/enrich HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n".utf8))
            return try connection.readResponse(within: .seconds(30))
        }
        #expect(refused.status == 503)
        #expect(refused.headers["retry-after"] == "1")
        #expect(refused.json["code"] as? String == "too-many-in-flight")
        #expect(refused.json["detail"] as? String == "3 requests are in process; retry later")
        #expect(try await server.request("GET", "/healthz").status == 200)
        // One upload goes: its slot is free again, and a whole request is served.
        uploads[0].disconnect()
        try await waitUntil("the abandoned upload's slot freed") { try server.metric("richpush_in_flight") == 2 }
        let served = try await server.request(
            "POST", "/v1/enrich", body: ServeTests.payload(bed.url("/media/photo.jpg")))
        #expect(served.status == 200)
        #expect(served.json["outcome"] as? String == "complete")
        #expect(try server.metric("richpush_in_flight") == 2)
        for upload in uploads.dropFirst() { upload.disconnect() }
        try await waitUntil("the other uploads' slots freed") { try server.metric("richpush_in_flight") == 0 }
        withExtendedLifetime(uploads) {}
        #expect(try await server.terminate() == 0)
    }

    /// The soft limit on open files, in `/proc/PID/limits`.
    static func openFilesLimit(_ server: ServeProcess) throws -> (soft: String, hard: String) {
        let limits = try String(
            contentsOfFile: "/proc/\(server.process.processIdentifier)/limits", encoding: .utf8)
        let line = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") })
        let fields = line.dropFirst("Max open files".count).split(separator: " ", omittingEmptySubsequences: true)
        return (String(fields[0]), String(fields[1]))
    }

    @Test(
        """
        the soft limit on open files is raised to the hard one at the start; one still under what --max-connections \
        may need is said
        """)
    func openFilesRaised() async throws {
        // A hard limit no higher than the test's own (a process may lower its hard limit, not raise it without
        // privilege): 4,096, or less in a container that gives less.
        var own = rlimit()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &own) == 0)
        let hard = min(4096, Int(own.rlim_max))
        if hard >= 1280 + 100 {
            let raised = try await ServeProcess([], launcher: ["/usr/bin/prlimit", "--nofile=300:\(hard)", "--"])
            #expect(try Self.openFilesLimit(raised) == ("\(hard)", "\(hard)"))
            #expect(!raised.startup.contains("open files limit"), "\(raised.startup)")
            #expect(try await raised.terminate() == 0)
        }
        let short = try await ServeProcess([], launcher: ["/usr/bin/prlimit", "--nofile=300:600", "--"])
        #expect(try Self.openFilesLimit(short) == ("600", "600"))
        #expect(
            short.startup.contains(
                "richpush serve: warning: the open files limit is 600 (hard limit 600), under the 1280 descriptors "
                    + "that --max-connections 1024 on 1 listener may need"),
            "\(short.startup)")
        #expect(try await short.terminate() == 0)
        // Within it: nothing said.
        let fits = try await ServeProcess(
            ["--max-connections", "300"], launcher: ["/usr/bin/prlimit", "--nofile=300:600", "--"])
        #expect(!fits.startup.contains("open files limit"), "\(fits.startup)")
        #expect(try await fits.terminate() == 0)
    }
}

extension ServeProcess {
    /// `/metrics` now, on a connection of its own (blocking: for `waitUntil`'s conditions).
    func metricsText() throws -> String {
        try HTTPConnection(port: port).exchange("GET", "/metrics", within: .seconds(30)).text
    }

    /// The sum of a family's samples (every label set) in `/metrics`; fails when the family has none.
    func metric(_ family: String) throws -> Int {
        var total: Int? = nil
        for line in try metricsText().split(separator: "\n") where !line.hasPrefix("#") {
            let name = line.prefix { $0 != "{" && $0 != " " }
            guard name == family, let value = line.split(separator: " ").last.flatMap({ Int($0) }) else { continue }
            total = (total ?? 0) + value
        }
        return try #require(total, "no \(family) in /metrics")
    }

    /// The server's resident memory, from /proc.
    func residentBytes() throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        let kilobytes = try #require(line.split(separator: " ").dropFirst().first.flatMap { Int($0) })
        return kilobytes * 1024
    }

}
