import FixtureOrigin
import Foundation
import Testing

@testable import RichPush

/// `richpush serve` through real HTTP: the binary on a loopback port, a raw HTTP/1.1 client, the fixture origin.
@Suite(.serialized)
struct ServeTests {
    static func payload(_ url: String) -> [UInt8] {
        Array(#"{"aps":{"alert":"hi","mutable-content":1},"adb_media":"\#(url)"}"#.utf8)
    }

    @Test("health, readiness, metrics, unknown paths and wrong methods")
    func routes() async throws {
        let bed = try TestBed()
        let server = try await ServeProcess(bed.cliOptions)
        #expect(try await server.request("GET", "/healthz").status == 200)
        #expect(try await server.request("GET", "/readyz").status == 200)
        let metrics = try await server.request("GET", "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        for family in [
            "richpush_payloads_total", "richpush_problems_total", "richpush_payload_duration_seconds",
            "richpush_fetched_bytes_total", "richpush_cache_lookups_total", "richpush_in_flight", "richpush_build_info",
        ] {
            #expect(metrics.text.contains("# TYPE \(family) "), "\(family) is missing")
        }
        #expect(metrics.text.contains("richpush_build_info{version=\"\(RichPushVersion.current)\"} 1"))
        // Every code a result can carry has its series from the start, registered from the code list.
        for code in EnrichmentProblem.Code.reported {
            #expect(metrics.text.contains("richpush_problems_total{code=\"\(code)\"} 0\n"), "\(code) is not registered")
        }
        let unknown = try await server.request("GET", "/v2/enrich")
        #expect(unknown.status == 404)
        #expect(unknown.json["code"] as? String == "not-found")
        #expect(unknown.json["detail"] as? String == "no such route: /v2/enrich")
        let wrong = try await server.request("GET", "/v1/enrich")
        #expect(wrong.status == 405)
        #expect(wrong.headers["allow"] == "POST")
        #expect(wrong.json["code"] as? String == "method-not-allowed")
        #expect(wrong.json["detail"] as? String == "GET is not allowed here")
        let wrongHealth = try await server.request("POST", "/healthz", body: [])
        #expect(wrongHealth.status == 405)
        #expect(wrongHealth.headers["allow"] == "GET, HEAD")
        #expect(wrongHealth.json["code"] as? String == "method-not-allowed")
        #expect(try await server.terminate() == 0)
    }

    @Test(
        """
        SIGHUP without --tenants is said in the log and changes nothing: the server goes on serving, and drains at \
        SIGTERM (it ended at once, with no drain)
        """)
    func hangupWithoutTenants() async throws {
        let bed = try TestBed()
        let server = try await ServeProcess(bed.cliOptions)
        server.process.signal(SIGHUP)
        try await waitUntil("the SIGHUP's log line") { server.logLines.contains { $0["reload"] != nil } }
        let line = try #require(server.logLines.first { $0["reload"] != nil })
        #expect(line["reload"] as? String == "nothing", "\(line)")
        #expect(line["detail"] as? String == "no --tenants file to read again", "\(line)")
        let reply = try await server.request(
            "POST", "/v1/enrich", body: Self.payload(bed.url("/media/photo.jpg")))
        #expect(reply.status == 200 && reply.json["outcome"] as? String == "complete", "\(reply.text)")
        #expect(try await server.terminate() == 0)
    }

    @Test("one payload: the result as enrich prints it, its request id, and its attachment served with type and ETag")
    func enrichOne() async throws {
        let bed = try TestBed()
        let server = try await ServeProcess(bed.cliOptions)
        let reply = try await server.request(
            "POST", "/v1/enrich", headers: [("Content-Type", "application/json"), ("X-Request-Id", "push-42")],
            body: Self.payload(bed.url("/media/photo.jpg")))
        #expect(reply.status == 200)
        #expect(reply.headers["x-request-id"] == "push-42")
        #expect(reply.json["input"] as? String == "push-42")
        #expect(reply.json["outcome"] as? String == "complete")
        let attachment = try #require((reply.json["attachments"] as? [[String: Any]])?.first)
        let path = try #require(attachment["path"] as? String)
        // The same result as `enrich` prints for the same payload, but for what differs per run.
        let file = NSTemporaryDirectory() + "serve-\(UUID().uuidString).json"
        try Data(Self.payload(bed.url("/media/photo.jpg"))).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let cli = try await CLI.run(["enrich"] + bed.cliOptions + [file])
        let expected = try #require(cli.lines.first)
        #expect(Set(reply.json.keys) == Set(expected.keys))
        // The content but for the attachment's own path (a fresh directory each run).
        func stable(_ result: [String: Any]) -> NSDictionary {
            var content = result["content"] as? [String: Any] ?? [:]
            content["richpush"] = (content["richpush"] as? [String: Any]).map { String(describing: $0.keys.sorted()) }
            return NSDictionary(dictionary: content)
        }
        #expect(stable(reply.json).isEqual(to: stable(expected) as! [AnyHashable: Any]))
        #expect(
            String(describing: (reply.json["attachments"] as? [[String: Any]])?.first?.keys.sorted())
                == String(describing: (expected["attachments"] as? [[String: Any]])?.first?.keys.sorted()))

        let parts = path.split(separator: "/")
        let name = parts[parts.count - 2] + "/" + parts[parts.count - 1]
        let served = try await server.request("GET", "/v1/attachments/\(name)")
        #expect(served.status == 200)
        #expect(served.body == fixture("photo.jpg"))
        #expect(served.headers["content-type"] == "image/jpeg")
        #expect(served.headers["etag"] == "\"\(attachment["sha256"] as? String ?? "?")\"")

        // Without X-Request-Id the server assigns one, echoes it and names the result with it.
        let assigned = try await server.request("POST", "/v1/enrich", body: Self.payload(bed.url("/media/photo.jpg")))
        let id = try #require(assigned.headers["x-request-id"])
        #expect(!id.isEmpty)
        #expect(assigned.json["input"] as? String == id)
        #expect(try await server.terminate() == 0)
    }

    @Test("the attachments route serves only files this server stored: no other name, no dot-dot, no link")
    func attachmentPaths() async throws {
        let bed = try TestBed()
        let server = try await ServeProcess(bed.cliOptions)
        let reply = try await server.request("POST", "/v1/enrich", body: Self.payload(bed.url("/media/photo.jpg")))
        let path = try #require(((reply.json["attachments"] as? [[String: Any]])?.first?["path"]) as? String)
        let parts = path.split(separator: "/").map(String.init)
        let directory = parts[parts.count - 2]
        let file = parts[parts.count - 1]
        // A secret beside the root, a foreign file inside it, and a link inside the stored directory.
        let secret = NSTemporaryDirectory() + "serve-secret-\(UUID().uuidString)"
        try Data("secret".utf8).write(to: URL(fileURLWithPath: secret))
        defer { try? FileManager.default.removeItem(atPath: secret) }
        try FileManager.default.createSymbolicLink(
            atPath: bed.attachments + "/\(directory)/link.jpg", withDestinationPath: secret)
        try Data("foreign".utf8).write(to: URL(fileURLWithPath: bed.attachments + "/\(directory)/other.jpg"))
        for target in [
            "/v1/attachments/\(directory)/link.jpg", "/v1/attachments/\(directory)/other.jpg",
            "/v1/attachments/\(directory)/../\(directory)/\(file)",
            "/v1/attachments/\(directory)/%2e%2e/\(directory)/\(file)",
            "/v1/attachments/../../../../etc/passwd", "/v1/attachments/%2e%2e/%2e%2e/etc/passwd",
            "/v1/attachments/\(directory)",
            "/v1/attachments/\(directory)/\(file)/", "/v1/attachments//\(directory)/\(file)",
        ] {
            let refused = try await server.request("GET", target)
            #expect(refused.status == 404, "\(target) answered \(refused.status)")
            #expect(!refused.text.contains("secret") && !refused.text.contains("root:"))
        }
        // The stored file replaced by a link to the secret is refused too.
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: secret)
        #expect(try await server.request("GET", "/v1/attachments/\(directory)/\(file)").status == 404)
        #expect(try await server.terminate() == 0)
    }

    @Test(
        """
        an attachment replaced by a same-size file is 404, not served under the stored ETag; a cache hit's link \
        changes nothing
        """
    )
    func replacedAttachment() async throws {
        let bed = try TestBed()
        let server = try await ServeProcess(bed.cliOptions)
        func storedName(_ reply: HTTPReply) throws -> (name: String, path: String) {
            let path = try #require(((reply.json["attachments"] as? [[String: Any]])?.first?["path"]) as? String)
            let parts = path.split(separator: "/")
            return (parts[parts.count - 2] + "/" + parts[parts.count - 1], path)
        }
        let first = try storedName(
            try await server.request("POST", "/v1/enrich", body: Self.payload(bed.url("/media/photo.jpg"))))
        // The same media again: a cache hit, whose attachment is a hard link to the first one's file.
        let second = try await server.request("POST", "/v1/enrich", body: Self.payload(bed.url("/media/photo.jpg")))
        #expect(
            try inode(try storedName(second).path) == (try inode(first.path)),
            "the second attachment is no link to the first")
        let served = try await server.request("GET", "/v1/attachments/\(first.name)")
        #expect(served.status == 200)
        #expect(served.body == fixture("photo.jpg"))
        // Another file of the same size renamed over the first.
        let replacement = first.path + ".new"
        try Data([UInt8](repeating: 0x5A, count: fixture("photo.jpg").count)).write(
            to: URL(fileURLWithPath: replacement))
        #expect(rename(replacement, first.path) == 0)
        let replaced = try await server.request("GET", "/v1/attachments/\(first.name)")
        #expect(replaced.status == 404)
        #expect(replaced.headers["etag"] == nil)
        #expect(try await server.request("GET", "/v1/attachments/\(try storedName(second).name)").status == 200)
        #expect(try await server.terminate() == 0)
    }

    @Test("a body that is not a payload is 400 with the invalid result; over the limit is 413 and nothing runs")
    func badBodies() async throws {
        let bed = try TestBed()
        let server = try await ServeProcess(bed.cliOptions + ["--max-body-bytes", "200"])
        let invalid = try await server.request("POST", "/v1/enrich", body: Array("{\"aps\":".utf8))
        #expect(invalid.status == 400)
        #expect(invalid.json["outcome"] as? String == "invalid")
        #expect(invalid.json["input"] as? String == invalid.headers["x-request-id"])
        let big = Array(
            (#"{"aps":{"mutable-content":1},"adb_media":"\#(bed.url("/media/photo.jpg"))","#
                + #""pad":"\#(String(repeating: "x", count: 300))"}"#).utf8)
        let declared = try await server.request("POST", "/v1/enrich", body: big)
        #expect(declared.status == 413)
        #expect(declared.json["code"] as? String == "payload-too-large")
        #expect(declared.json["detail"] as? String == "the body is larger than 200 bytes")
        // Sent chunked (no declared length): read, dropped, answered 413 on a connection still usable.
        let reply = try await offPool {
            let connection = try HTTPConnection(port: server.port)
            let chunk = String(big.count, radix: 16)
            try connection.send(
                Array("POST /v1/enrich HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\(chunk)\r\n".utf8)
                    + big
                    + Array("\r\n0\r\n\r\n".utf8))
            let first = try connection.readResponse(within: .seconds(30))
            let second = try connection.exchange("GET", "/healthz")
            return (first.status, second.status)
        }
        #expect(reply.0 == 413)
        #expect(reply.1 == 200)
        #expect(bed.origin.exchanges.isEmpty, "a refused body must not start any fetch")
        let metrics = try await server.request("GET", "/metrics")
        #expect(metrics.text.contains("richpush_payloads_total{outcome=\"invalid\"} 1"))
        #expect(metrics.text.contains("richpush_payloads_total{outcome=\"complete\"} 0"))
        #expect(try await server.terminate() == 0)
    }

    @Test("NDJSON in, NDJSON results streamed chunked, in order; a bad line is an invalid line")
    func ndjson() async throws {
        let bed = try TestBed()
        let server = try await ServeProcess(bed.cliOptions)
        let body = [
            String(decoding: Self.payload(bed.url("/slow/photo.jpg?ms=300")), as: UTF8.self),
            "",
            "not json",
            String(decoding: Self.payload(bed.url("/media/logo.png")), as: UTF8.self),
        ].joined(separator: "\n")
        let reply = try await server.request(
            "POST", "/v1/enrich", headers: [("Content-Type", "application/x-ndjson"), ("X-Request-Id", "batch")],
            body: Array(body.utf8))
        #expect(reply.status == 200)
        #expect(reply.chunked)
        #expect(reply.headers["content-type"] == "application/x-ndjson")
        let lines = reply.lines
        #expect(lines.map { $0["input"] as? String } == ["batch:1", "batch:3", "batch:4"])
        #expect(lines.map { $0["outcome"] as? String } == ["complete", "invalid", "complete"])
        #expect(try await server.terminate() == 0)
    }

    @Test("explain answers the explain --json object")
    func explain() async throws {
        let bed = try TestBed()
        let server = try await ServeProcess(bed.cliOptions)
        let reply = try await server.request(
            "POST", "/v1/explain", headers: [("X-Request-Id", "e1")], body: Self.payload(bed.url("/media/photo.jpg")))
        #expect(reply.status == 200)
        #expect(reply.json["input"] as? String == "e1")
        #expect(reply.json["conventions"] != nil)
        #expect(reply.text.contains(#""verdict":"attach","type":"public.jpeg""#))
        let invalid = try await server.request("POST", "/v1/explain", body: Array("[".utf8))
        #expect(invalid.status == 400)
        #expect((invalid.json["invalid"] as? [String: Any])?["code"] as? String == "not-json")
        #expect(try await server.terminate() == 0)
    }

    @Test("preflight answers the preflight --json object: 200 ready or not, 400 for a body that is not a payload")
    func preflight() async throws {
        let bed = try TestBed()
        let server = try await ServeProcess(bed.cliOptions)
        let reply = try await server.request(
            "POST", "/v1/preflight", headers: [("X-Request-Id", "p1")],
            body: Self.payload(bed.url("/media/photo.jpg")))
        #expect(reply.status == 200)
        #expect(reply.json["input"] as? String == "p1")
        #expect(reply.json["ready"] as? Bool == true)
        #expect(reply.text.contains(#""verdict":"attached","type":"public.jpeg""#))
        let refused = try await server.request("POST", "/v1/preflight", body: Self.payload(bed.url("/status/404")))
        #expect(refused.status == 200)
        #expect(refused.json["ready"] as? Bool == false)
        let invalid = try await server.request("POST", "/v1/preflight", body: Array("[".utf8))
        #expect(invalid.status == 400)
        #expect((invalid.json["problems"] as? [[String: Any]])?.first?["code"] as? String == "not-json")
        // Judged, then removed: nothing stays under the attachments root.
        #expect(bed.filesOnDisk().isEmpty, "\(bed.filesOnDisk())")
        #expect(try await server.terminate() == 0)
    }

    @Test("?deadline shortens the deadline, never lengthens it; a bad one is 400")
    func deadlineParameter() async throws {
        let bed = try TestBed()
        // The outcome tells which deadline held: each origin answers after the shorter deadline and before the
        // longer one (by 1.5 s at least, so that a loaded machine cannot blur them). Unclamped, the longer request
        // would end `failed` at curl's 5 s low-speed abort (network.lowSpeedWindow), after the server's 3 s.
        let server = try await ServeProcess(bed.cliOptions + ["--deadline", "3"])
        var started = ContinuousClock.now
        let shorter = try await server.request(
            "POST", "/v1/enrich?deadline=0.3", body: Self.payload(bed.url("/slow/photo.jpg?ms=1500")))
        #expect(shorter.status == 200)
        #expect(
            shorter.json["outcome"] as? String == "expired",
            "the 0.3 s deadline was not applied: \(ContinuousClock.now - started)")
        started = ContinuousClock.now
        let longer = try await server.request(
            "POST", "/v1/enrich?deadline=30", body: Self.payload(bed.url("/slow/logo.png?ms=6000")))
        #expect(longer.status == 200)
        #expect(
            longer.json["outcome"] as? String == "expired",
            "the 30 s deadline replaced the server's 3 s: \(ContinuousClock.now - started)")
        for bad in ["0", "-1", "abc", "nan", "inf"] {
            let refused = try await server.request(
                "POST", "/v1/enrich?deadline=\(bad)", body: Self.payload(bed.url("/media/photo.jpg")))
            #expect(refused.status == 400, "deadline=\(bad) answered \(refused.status)")
        }
        #expect(try await server.terminate() == 0)
    }

    @Test(
        """
        --token-file: /v1/ routes need the bearer token, its scheme in any case; health, readiness and metrics stay \
        open
        """
    )
    func token() async throws {
        let bed = try TestBed()
        let secret = "s3cret-token-0123456789"
        let file = try ServeTokenTests.tokenFile(secret + "\n", mode: 0o600)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let server = try await ServeProcess(bed.cliOptions + ["--token-file", file])
        #expect(
            server.startup.isEmpty, "a private token file and a loopback listener warn of nothing: \(server.startup)")
        let payload = Self.payload(bed.url("/media/photo.jpg"))
        for value in [
            nil, "Bearer wrong", "Bearer \(secret.dropLast())", "Basic \(secret)", "Bearer\(secret)", "Bearer",
            "Bearers \(secret)", "\(secret)",
        ] {
            let refused = try await server.request(
                "POST", "/v1/enrich", headers: value.map { [("Authorization", $0)] } ?? [], body: payload)
            #expect(refused.status == 401, "\(value ?? "no header") answered \(refused.status)")
            #expect(refused.headers["www-authenticate"] == "Bearer")
            #expect(refused.json["code"] as? String == "unauthorized")
        }
        #expect(try await server.request("GET", "/v1/attachments/a/b").status == 401)
        #expect(bed.origin.exchanges.isEmpty)
        // RFC 9110 §11.1: the scheme's name in any case; §11.4: one or more spaces after it.
        for scheme in ["Bearer ", "bearer ", "BEARER ", "bEaReR ", "Bearer   "] {
            let allowed = try await server.request(
                "POST", "/v1/enrich", headers: [("Authorization", scheme + secret)], body: payload)
            #expect(allowed.status == 200, "'\(scheme)' answered \(allowed.status)")
            #expect(allowed.json["outcome"] as? String == "complete")
        }
        // RFC 9110 §5.5: a field value's trailing spaces and tabs are not part of it.
        let padded = try await server.request(
            "POST", "/v1/enrich", headers: [("Authorization", "Bearer \(secret) \t "), ("X-Request-Id", "push-7\t ")],
            body: payload)
        #expect(padded.status == 200, "\(padded.text)")
        #expect(padded.headers["x-request-id"] == "push-7")
        for open in ["/healthz", "/readyz", "/metrics"] {
            #expect(try await server.request("GET", open).status == 200)
        }
        // /metrics, answered off the server's thread: a body, declared or chunked, refused at once (a chunked one
        // went unanswered, the connection closed).
        for body in ["Content-Length: 3\r\n\r\nabc", "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"] {
            let request = "GET /metrics HTTP/1.1\r\nHost: x\r\n" + body
            let (reply, _) = try await offPool { try HTTPWire.exchange(Array(request.utf8), port: server.port) }
            #expect(reply?.status == 413, "\(body)")
        }
        #expect(try await server.terminate() == 0)
    }

    @Test("beyond --max-in-flight: 503 with Retry-After, nothing started")
    func backpressure() async throws {
        let bed = try TestBed()
        let server = try await ServeProcess(bed.cliOptions + ["--max-in-flight", "1"])
        let slow = Task {
            try await server.request("POST", "/v1/enrich", body: Self.payload(bed.url("/slow/photo.jpg?ms=1500")))
        }
        try await waitUntil("the slow payload to be in flight") { bed.origin.exchanges.count == 1 }
        let refused = try await server.request("POST", "/v1/enrich", body: Self.payload(bed.url("/media/logo.png")))
        #expect(refused.status == 503)
        #expect(refused.headers["retry-after"] == "1")
        #expect(refused.json["code"] as? String == "too-many-in-flight")
        #expect(try await slow.value.json["outcome"] as? String == "complete")
        #expect(bed.origin.exchanges.count == 1, "the refused payload must not have been fetched")
        #expect(
            try await server.request("POST", "/v1/enrich", body: Self.payload(bed.url("/media/logo.png"))).status == 200
        )
        #expect(try await server.terminate() == 0)
    }

    @Test("200 idle connections do not hold the server from a working client")
    func idleConnections() async throws {
        let bed = try TestBed()
        let server = try await ServeProcess(bed.cliOptions)
        let idle = try (0..<200).map { _ in try HTTPConnection(port: server.port) }
        // Half of them send half a request and stop.
        for connection in idle.prefix(100) {
            try connection.send(Array("POST /v1/enrich HTTP/1.1\r\nHost: x\r\n".utf8))
        }
        for _ in 0..<5 {
            let reply = try await server.request(
                "POST", "/v1/enrich", body: Self.payload(bed.url("/media/photo.jpg")), within: .seconds(20))
            #expect(reply.json["outcome"] as? String == "complete")
        }
        withExtendedLifetime(idle) {}
        #expect(try await server.terminate() == 0)
    }

    @Test("--idle-timeout closes a connection that sends nothing, and one that stops halfway through its headers")
    func idleTimeout() async throws {
        let bed = try TestBed()
        let server = try await ServeProcess(bed.cliOptions + ["--idle-timeout", "1"])
        let (silent, halfway, working) = try await offPool {
            let silent = try HTTPConnection(port: server.port)
            let halfway = try HTTPConnection(port: server.port)
            try halfway.send(Array("POST /v1/enrich HTTP/1.1\r\nHost: x\r\n".utf8))
            // Closed within a bound far above the 1 s timeout, for a loaded machine; the bound fails loudly.
            let silentClosed = try silent.isClosed(within: .seconds(20))
            let halfwayClosed = try halfway.isClosed(within: .seconds(20))
            let working = try HTTPConnection(port: server.port).exchange("GET", "/healthz").status
            return (silentClosed, halfwayClosed, working)
        }
        #expect(silent)
        #expect(halfway)
        #expect(working == 200)
        #expect(try await server.terminate() == 0)
    }

    @Test("a standard error nobody reads does not stall the server: the access log waits, requests do not")
    func stuckLogReader() async throws {
        let bed = try TestBed()
        let server = try await ServeProcess(bed.cliOptions, readingStandardError: false)
        // 2,000 log lines are about 150 KB, more than a pipe holds (64 KB).
        let answered = try await offPool {
            let connection = try HTTPConnection(port: server.port)
            var answered = 0
            for _ in 0..<2000 where try connection.exchange("GET", "/healthz", within: .seconds(10)).status == 200 {
                answered += 1
            }
            return answered
        }
        #expect(answered == 2000)
    }

    @Test("the address policy holds for payloads that arrive over HTTP")
    func addressPolicy() async throws {
        let bed = try TestBed()
        // The bed's options without --allow-network: loopback is refused, as by default.
        var options = bed.cliOptions
        let index = options.firstIndex(of: "--allow-network")!
        options.removeSubrange(index...(index + 1))
        let server = try await ServeProcess(options)
        let reply = try await server.request("POST", "/v1/enrich", body: Self.payload(bed.url("/media/photo.jpg")))
        #expect(reply.json["outcome"] as? String == "failed")
        #expect(reply.text.contains("blocked-address"))
        #expect(bed.origin.exchanges.isEmpty)
        let metrics = try await server.request("GET", "/metrics")
        #expect(metrics.text.contains("richpush_problems_total{code=\"blocked-address\"} 1"))
        #expect(try await server.terminate() == 0)
    }

    @Test("metrics count outcomes, durations, bytes and cache lookups; one access log line per request")
    func metricsAndLog() async throws {
        let bed = try TestBed()
        let server = try await ServeProcess(bed.cliOptions)
        for id in ["m1", "m2"] {
            let reply = try await server.request(
                "POST", "/v1/enrich", headers: [("X-Request-Id", id)], body: Self.payload(bed.url("/media/photo.jpg")))
            #expect(reply.json["outcome"] as? String == "complete")
        }
        let metrics = try await server.request("GET", "/metrics").text
        #expect(metrics.contains("richpush_payloads_total{outcome=\"complete\"} 2"))
        #expect(metrics.contains("richpush_cache_lookups_total{result=\"hit\"} 1"))
        #expect(metrics.contains("richpush_cache_lookups_total{result=\"miss\"} 1"))
        #expect(metrics.contains("richpush_fetched_bytes_total \(fixture("photo.jpg").count)"))
        #expect(metrics.contains("richpush_payload_duration_seconds_count 2"))
        #expect(metrics.contains("richpush_payload_duration_seconds_bucket{le=\"+Inf\"} 2"))
        #expect(metrics.contains("richpush_in_flight 0"))
        try await waitUntil("the access log of three requests") { server.logLines.count >= 3 }
        let entries = server.logLines
        let first = try #require(entries.first { $0["request_id"] as? String == "m1" })
        #expect(first["method"] as? String == "POST")
        #expect(first["path"] as? String == "/v1/enrich")
        #expect(first["status"] as? Int == 200)
        #expect(first["outcome"] as? String == "complete")
        #expect(first["elapsed_ms"] is Int)
        #expect(entries.contains { $0["path"] as? String == "/metrics" && $0["status"] as? Int == 200 })
        #expect(try await server.terminate() == 0)
    }

    @Test(
        """
        SIGTERM drains: the listener closes, readiness turns 503, new work is refused, requests in flight get their \
        responses, each connection closed after its answer, exit 0
        """
    )
    func drain() async throws {
        let bed = try TestBed()
        let server = try await ServeProcess(bed.cliOptions)
        // Keep-alive connections opened before the signal, to ask for readiness and for work after it.
        let keepAlive = try HTTPConnection(port: server.port)
        let working = try HTTPConnection(port: server.port)
        for connection in [keepAlive, working] {
            let ready = try connection.exchange("GET", "/readyz")
            #expect(ready.status == 200)
            #expect(ready.headers["connection"] == nil)
        }
        let slow = (0..<3).map { index in
            Task {
                try await server.request(
                    "POST", "/v1/enrich", headers: [("X-Request-Id", "slow-\(index)")],
                    body: Self.payload(bed.url("/slow/photo.jpg?ms=1500&n=\(index)")))
            }
        }
        try await waitUntil("three slow payloads in flight") { bed.origin.exchanges.count == 3 }
        server.process.signal(SIGTERM)
        // The listener closes once the drain has begun.
        let port = server.port
        try await waitUntil("the listener closed") { (try? HTTPConnection(port: port)) == nil }
        let ready = try keepAlive.exchange("GET", "/readyz")
        #expect(ready.status == 503)
        let refused = try working.exchange("POST", "/v1/enrich", body: Self.payload(bed.url("/media/logo.png")))
        #expect(refused.status == 503)
        #expect(refused.json["code"] as? String == "draining")
        // Each answer closes its connection: a keep-alive client goes elsewhere rather than holding the drain.
        for reply in [ready, refused] { #expect(reply.headers["connection"]?.lowercased() == "close") }
        let closed = try await offPool {
            [try keepAlive.isClosed(within: .seconds(20)), try working.isClosed(within: .seconds(20))]
        }
        #expect(closed == [true, true])
        for (index, task) in slow.enumerated() {
            let reply = try await task.value
            #expect(reply.status == 200)
            #expect(reply.json["input"] as? String == "slow-\(index)")
            #expect(reply.json["outcome"] as? String == "complete")
        }
        #expect(try await server.waitForExit(within: .seconds(30)) == 0)
        #expect(bed.origin.exchanges.count == 3, "the refused payload must not have been fetched")
        #expect(!bed.filesOnDisk().contains { $0.hasSuffix(".partial") })
        #expect(bed.filesOnDisk().count == 3)
    }

    @Test("SIGTERM past --drain-timeout cancels what remains: every request still answered, no partial file")
    func drainTimeout() async throws {
        let bed = try TestBed()
        let server = try await ServeProcess(bed.cliOptions + ["--drain-timeout", "0.5", "--deadline", "60"])
        let stuck = Task { try await server.request("POST", "/v1/enrich", body: Self.payload(bed.url("/stall"))) }
        try await waitUntil("the stalled payload in flight") { bed.origin.exchanges.count == 1 }
        server.process.signal(SIGTERM)
        let reply = try await stuck.value
        #expect(reply.status == 200)
        #expect(["failed", "expired", "cancelled"].contains(reply.json["outcome"] as? String ?? ""))
        #expect(try await server.waitForExit(within: .seconds(30)) == 0)
        #expect(bed.filesOnDisk().isEmpty)
    }
}

extension ServeTests {
    @Test(
        """
        SIGTERM with a client that never reads a large NDJSON response and one that trickles its body: both cut off \
        and named in the log, exit 0 within --drain-timeout and the grace
        """
    )
    func drainCutsOff() async throws {
        let bed = try TestBed()
        let server = try await ServeProcess(bed.cliOptions + ["--drain-timeout", "1"])
        // 50 MB of results for a client whose receive buffer is 4 KB and who reads none of them.
        let body = ServeLimitsTests.largeLines(1000)
        let unread = try HTTPConnection(port: server.port, receiveBuffer: 4096)
        try await offPool { try unread.send(ServeLimitsTests.ndjsonHead(body.count, id: "unread") + body) }
        // A body of 10,000 bytes, sent a byte at a time.
        let trickle = try HTTPConnection(port: server.port)
        try trickle.send(
            Array("POST /v1/enrich HTTP/1.1\r\nHost: x\r\nX-Request-Id: trickle\r\nContent-Length: 10000\r\n\r\n{".utf8)
        )
        try await waitUntil("the batch held and the upload admitted", within: .seconds(60), every: .milliseconds(50)) {
            try server.metric("richpush_responses_held") == 1 && server.metric("richpush_in_flight") == 2
        }
        let trickling = Task.detached {
            // A byte every 100 ms until the server closes the connection (bounded: 600 bytes, a minute).
            for _ in 0..<600 {
                guard (try? trickle.send([0x20])) != nil else { return true }
                try? await Task.sleep(for: .milliseconds(100))
            }
            return false
        }
        let signalled = ContinuousClock.now
        server.process.signal(SIGTERM)
        let status = try await server.waitForExit(within: .seconds(60))
        let took = ContinuousClock.now - signalled
        #expect(status == 0)
        // --drain-timeout (1 s) plus the grace (2 s), with room for a loaded machine; without the bound the trickle
        // would hold the drain for its whole body (100 s).
        #expect(took < .seconds(1) + .seconds(2) + .seconds(15), "exited \(took) after SIGTERM")
        #expect(await trickling.value, "the trickling client's connection was never closed")
        try await waitUntil("the drain's last line") { server.logLines.contains { $0["drain"] as? String == "done" } }
        let drain = server.logLines.filter { $0["drain"] != nil }
        let cutOff = drain.filter { $0["drain"] as? String == "cut-off" }
        let reading = try #require(cutOff.first { $0["request_id"] as? String == "unread" }, "\(drain)")
        #expect(reading["stage"] as? String == "sending-response")
        #expect(reading["path"] as? String == "/v1/enrich")
        #expect((reading["sent_bytes"] as? Int ?? 0) > 0)
        let receiving = try #require(cutOff.first { $0["request_id"] as? String == "trickle" }, "\(drain)")
        #expect(receiving["stage"] as? String == "receiving-body")
        #expect(receiving["method"] as? String == "POST")
        let done = try #require(drain.last)
        #expect(done["drain"] as? String == "done")
        #expect(done["cut_off"] as? Int == 2)
        #expect((done["elapsed_ms"] as? Int ?? .max) < 3000 + 15_000)
        // Its access log line says its status, and that its response was not sent whole.
        let unreadLine = try #require(
            server.logLines.first { $0["request_id"] as? String == "unread" && $0["status"] != nil }, "\(drain)")
        #expect(unreadLine["status"] as? Int == 200)
        // Stopped with the server ("shutdown"), or cut as it ran dry with the server stopping ("error").
        #expect(["shutdown", "error"].contains(unreadLine["incomplete"] as? String), "\(unreadLine)")
        withExtendedLifetime(unread) {}
    }
}

@Suite struct StreamDrainTests {
    @Test("stream on SIGTERM: stops reading, writes the results of the payloads in flight, exits 0, no partial file")
    func drainsOnSignal() async throws {
        let bed = try TestBed()
        let (process, input, output) = try CLI.start(["stream"] + bed.cliOptions)
        for index in 0..<2 {
            input.write(
                Data(
                    (String(decoding: ServeTests.payload(bed.url("/slow/photo.jpg?ms=1000&n=\(index)")), as: UTF8.self)
                        + "\n").utf8))
        }
        try await waitUntil("two slow payloads in flight") { bed.origin.exchanges.count == 2 }
        process.signal(SIGTERM)
        // Standard input stays open: the command must not wait for more of it.
        let text = try await readToEnd(output, within: .seconds(30))
        try await waitUntil("stream to exit", within: .seconds(30)) { !process.isRunning }
        #expect(process.terminationStatus == 0)
        let lines = text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(lines.map { $0["input"] as? String } == ["-:1", "-:2"])
        #expect(lines.allSatisfy { $0["outcome"] as? String == "complete" })
        #expect(!bed.filesOnDisk().contains { $0.hasSuffix(".partial") })
        try input.close()
    }
}

/// Reads `handle` to its end on a thread of its own; fails (throws) when `limit` passes first.
func readToEnd(_ handle: FileHandle, within limit: Duration) async throws -> String {
    try await offPool {
        let end = ContinuousClock.now + limit
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            guard ContinuousClock.now < end else { throw ServeFailure("no end of output within \(limit)") }
            var poller = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 50) >= 0 else { continue }
            guard poller.revents != 0 else { continue }
            let count = read(handle.fileDescriptor, &buffer, buffer.count)
            if count <= 0 { return String(decoding: bytes, as: UTF8.self) }
            bytes += buffer[..<count]
        }
    }
}
