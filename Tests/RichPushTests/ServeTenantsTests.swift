import FixtureOrigin
import Foundation
import Testing

@testable import RichPush

/// `serve --tenants`: one process, several apps, each by its own token and settings, isolated from the others.
/// Through the binary on loopback, with the fixture origin; every wait bounded.
@Suite(.serialized)
struct ServeTenantsTests {
    /// A tenant of a test: its name, its token (random) and what the file says of it besides (JSON values, not
    /// changed once made: unchecked).
    struct TestTenant: @unchecked Sendable {
        let name: String
        let token = "tok-" + UUID().uuidString
        var fields: [String: Any] = [:]

        init(_ name: String, _ fields: [String: Any] = [:]) {
            self.name = name
            self.fields = fields
        }

        /// The lowercase hex SHA-256 of the token, as the file holds it.
        var digest: String { sha256Digest(of: Array(token.utf8)).map { String(format: "%02x", $0) }.joined() }

        var entry: [String: Any] { fields.merging(["name": name, "token_sha256": digest]) { $1 } }

        var authorization: [(String, String)] { [("Authorization", "Bearer \(token)")] }
    }

    /// A tenants file holding `tenants`; its path.
    static func file(_ tenants: [TestTenant], at path: String? = nil) throws -> String {
        let path = path ?? NSTemporaryDirectory() + "tenants-\(UUID().uuidString).json"
        let data = try JSONSerialization.data(withJSONObject: ["tenants": tenants.map(\.entry)])
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
        return path
    }

    static func payload(_ url: String) -> [UInt8] { ServeTests.payload(url) }

    /// `POST /v1/enrich` of the payload attaching `url`, as `tenant`.
    static func enrich(
        _ server: ServeProcess, _ url: String, as tenant: TestTenant, query: String = ""
    ) async throws -> HTTPReply {
        try await server.request(
            "POST", "/v1/enrich" + query, headers: tenant.authorization, body: payload(url))
    }

    /// The codes of a result's problems.
    static func codes(_ reply: HTTPReply) -> [String] {
        (reply.json["problems"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
    }

    @Test(
        """
        a request's token selects its tenant; none, an unknown one, another scheme or the digest itself is 401; \
        the access log names the tenant
        """
    )
    func tokens() async throws {
        let bed = try TestBed()
        let (a, b) = (TestTenant("alpha"), TestTenant("beta"))
        let file = try Self.file([a, b])
        let server = try await ServeProcess(bed.cliOptions + ["--tenants", file])
        let url = bed.url("/media/photo.jpg")
        for headers in [
            [], [("Authorization", "Bearer not-a-tenant-token-at-all")], [("Authorization", "Basic \(a.token)")],
            [("Authorization", "Bearer \(a.digest)")], [("Authorization", "Bearer ")],
            [("Authorization", "Bearer \(a.token)x")], [("Authorization", "Bearer \(a.token.dropLast())")],
            [("Authorization", "Bearer \(a.token.uppercased())")], [("Authorization", "Bearer\t\(a.token)")],
            [("Authorization", "\(a.token)")], [("Authorization", "Bearer \(a.token) \(b.token)")],
        ] {
            let refused = try await server.request("POST", "/v1/enrich", headers: headers, body: Self.payload(url))
            #expect(refused.status == 401, "\(headers)")
            #expect(refused.json["code"] as? String == "unauthorized")
            #expect(refused.headers["www-authenticate"] == "Bearer")
        }
        #expect(try await server.request("GET", "/v1/attachments/x/y").status == 401)
        for tenant in [a, b] {
            let reply = try await Self.enrich(server, url, as: tenant)
            #expect(reply.status == 200)
            #expect(reply.json["outcome"] as? String == "complete")
        }
        // The scheme's name in any case, as RFC 9110 has it.
        let lower = try await server.request(
            "POST", "/v1/enrich", headers: [("Authorization", "bearer \(b.token)")], body: Self.payload(url))
        #expect(lower.status == 200)
        try await waitUntil("the access log lines of the three requests served") {
            server.logLines.filter { $0["status"] as? Int == 200 }.count >= 3
        }
        let tenants = server.logLines.filter { $0["status"] as? Int == 200 }.map { $0["tenant"] as? String }
        #expect(tenants == ["alpha", "beta", "beta"])
        #expect(server.logLines.filter { $0["status"] as? Int == 401 }.allSatisfy { $0["tenant"] == nil })
        #expect(try await server.terminate() == 0)
    }

    @Test(
        """
        the media cache never hands a tenant what another's policy fetched: beta, whose policy refuses loopback, is \
        refused the URL alpha has cached (blocked-address), and alpha still gets it
        """
    )
    func cacheIsolation() async throws {
        let bed = try TestBed()
        let alpha = TestTenant("alpha")
        let beta = TestTenant("beta", ["allow_network": [] as [String]])
        let server = try await ServeProcess(bed.cliOptions + ["--tenants", try Self.file([alpha, beta])])
        let url = bed.url("/media/photo.jpg")
        let first = try await Self.enrich(server, url, as: alpha)
        #expect(first.json["outcome"] as? String == "complete")
        let refused = try await Self.enrich(server, url, as: beta)
        #expect(refused.status == 200)
        #expect(refused.json["outcome"] as? String == "failed")
        #expect(Self.codes(refused) == ["blocked-address"])
        #expect((refused.json["attachments"] as? [Any])?.isEmpty == true)
        let again = try await Self.enrich(server, url, as: alpha)
        #expect(again.json["outcome"] as? String == "complete")
        // Both at once: the single flight of one is not the other's either.
        async let allowing = Self.enrich(server, bed.url("/slow/logo.png?ms=300"), as: alpha)
        async let blocking = Self.enrich(server, bed.url("/slow/logo.png?ms=300"), as: beta)
        let (allowed, blocked) = try await (allowing, blocking)
        #expect(allowed.json["outcome"] as? String == "complete")
        #expect(Self.codes(blocked) == ["blocked-address"])
        // explain and preflight run under the tenant's engine too.
        for route in ["/v1/explain", "/v1/preflight"] {
            let refusedThere = try await server.request(
                "POST", route, headers: beta.authorization, body: Self.payload(url))
            #expect(refusedThere.status == 200)
            #expect(refusedThere.text.contains("blocked-address"), "\(route): \(refusedThere.text)")
            let allowedThere = try await server.request(
                "POST", route, headers: alpha.authorization, body: Self.payload(url))
            #expect(allowedThere.status == 200)
            #expect(!allowedThere.text.contains("blocked-address"), "\(route): \(allowedThere.text)")
        }
        #expect(try await server.terminate() == 0)
    }

    /// Tenants with different CA bundles share the fetch loop (only `resolve` splits it): libcurl keeps a kept
    /// connection, a TLS session and the CA store it read apart by the certificates trusted, so none that alpha's
    /// bundle trusted is reused for beta. Over nginx speaking HTTP/2, whose connection alpha keeps.
    @Test(
        """
        a tenant's CA bundle is its own on the shared fetch loop: beta, trusting another CA, is refused (tls) the \
        origin alpha's bundle trusts and whose connection alpha keeps; alpha is served on that connection after
        """
    )
    func caBundleIsolation() async throws {
        let bed = try TestBed()
        let front = try await offPool { try NginxFront(upstream: bed.origin.port) }
        let otherDirectory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: otherDirectory) }
        let other = try await offPool { try makeCertificate(in: otherDirectory) }
        let alpha = TestTenant("alpha")
        let beta = TestTenant("beta", ["ca_bundle": other.certificate])
        let server = try await ServeProcess(
            bed.cliOptions + [
                "--resolve", "media.test:\(front.port):127.0.0.1", "--ca-bundle", front.certificate, "--tenants",
                try Self.file([alpha, beta]),
            ])
        let base = "https://media.test:\(front.port)/media/"
        let first = try await Self.enrich(server, base + "photo.jpg", as: alpha)
        #expect(first.json["outcome"] as? String == "complete")
        let refused = try await Self.enrich(server, base + "photo.jpg", as: beta)
        #expect(refused.json["outcome"] as? String == "failed")
        #expect(Self.codes(refused) == ["tls"])
        let again = try await Self.enrich(server, base + "logo.png", as: alpha)
        #expect(again.json["outcome"] as? String == "complete")
        // nginx saw alpha's two requests, on one connection; beta's never got past the handshake.
        try await waitUntil("nginx's log of alpha's two requests") { front.requests().count >= 2 }
        let requests = front.requests()
        #expect(requests.map(\.target) == ["/media/photo.jpg", "/media/logo.png"])
        #expect(Set(requests.map(\.connection)).count == 1, "\(requests)")
        #expect(try await server.terminate() == 0)
    }

    @Test(
        """
        a tenant that pins names of its own (resolve) fetches on a loop of its own: another tenant never reaches a \
        name only the first pinned (curl keeps pinned names in its multi handle's DNS cache)
        """
    )
    func pinnedNames() async throws {
        let bed = try TestBed()
        let port = bed.origin.port
        let pinned = TestTenant(
            "pinned", ["resolve": ["media.test:\(port):127.0.0.1", "private.test:\(port):127.0.0.1"]])
        let plain = TestTenant("plain")
        let server = try await ServeProcess(bed.cliOptions + ["--tenants", try Self.file([pinned, plain])])
        let url = "http://private.test:\(port)/media/photo.jpg"
        let own = try await Self.enrich(server, url, as: pinned)
        #expect(own.json["outcome"] as? String == "complete")
        let other = try await Self.enrich(server, url, as: plain)
        #expect(other.json["outcome"] as? String == "failed", "\(other.text)")
        #expect((other.json["attachments"] as? [Any])?.isEmpty == true)
        // The names both pin still work for both.
        for tenant in [pinned, plain] {
            let shared = try await Self.enrich(server, bed.url("/media/logo.png"), as: tenant)
            #expect(shared.json["outcome"] as? String == "complete")
        }
        #expect(try await server.terminate() == 0)
    }

    @Test(
        """
        past --drain-timeout, a payload of a tenant on a loop of its own is cut off with the rest: the process exits \
        long before that payload's deadline
        """
    )
    func drainOwnLoop() async throws {
        let bed = try TestBed()
        let port = bed.origin.port
        let pinned = TestTenant(
            "pinned", ["resolve": ["media.test:\(port):127.0.0.1", "private.test:\(port):127.0.0.1"]])
        let server = try await ServeProcess(
            bed.cliOptions + ["--drain-timeout", "1", "--tenants", try Self.file([pinned])])
        let stalled = Task {
            try? await Self.enrich(
                server, "http://private.test:\(port)/drip/photo.tiff?bytes=2048&ms=1000", as: pinned,
                query: "?deadline=25")
        }
        try await waitUntil("the stalled payload to be in flight") { bed.origin.exchanges.count == 1 }
        let started = ContinuousClock.now
        // 25 s is the payload's deadline: a drain that waited for it would take that long.
        #expect(try await server.terminate(within: .seconds(15)) == 0)
        #expect(ContinuousClock.now - started < .seconds(15))
        _ = await stalled.value
    }

    @Test("an attachment is served only to the tenant it was stored for: another's token gets 404, as for none")
    func attachmentIsolation() async throws {
        let bed = try TestBed()
        let (alpha, beta) = (TestTenant("alpha"), TestTenant("beta"))
        let server = try await ServeProcess(bed.cliOptions + ["--tenants", try Self.file([alpha, beta])])
        let reply = try await Self.enrich(server, bed.url("/media/photo.jpg"), as: alpha)
        let path = try #require((reply.json["attachments"] as? [[String: Any]])?.first?["path"] as? String)
        let name = path.split(separator: "/").suffix(2).joined(separator: "/")
        let own = try await server.request("GET", "/v1/attachments/\(name)", headers: alpha.authorization)
        #expect(own.status == 200)
        #expect(own.headers["content-type"] == "image/jpeg")
        let other = try await server.request("GET", "/v1/attachments/\(name)", headers: beta.authorization)
        #expect(other.status == 404)
        #expect(other.json["code"] as? String == "not-found")
        let unknown = try await server.request(
            "GET", "/v1/attachments/\(name.dropLast(5))a.jpg", headers: beta.authorization)
        #expect(other.text == unknown.text, "another tenant's attachment reads as an unknown one")
        // An NDJSON request's attachments likewise: beta's lines are stored for beta alone.
        let batch = try await server.request(
            "POST", "/v1/enrich", headers: beta.authorization + [("Content-Type", "application/x-ndjson")],
            body: Self.payload(bed.url("/media/logo.png")) + [0x0A])
        #expect(batch.status == 200)
        let line = try #require(
            batch.text.split(separator: "\n").first.flatMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            })
        let batchPath = try #require((line["attachments"] as? [[String: Any]])?.first?["path"] as? String)
        let batchName = batchPath.split(separator: "/").suffix(2).joined(separator: "/")
        #expect(
            try await server.request("GET", "/v1/attachments/\(batchName)", headers: beta.authorization).status == 200)
        #expect(
            try await server.request("GET", "/v1/attachments/\(batchName)", headers: alpha.authorization).status == 404)
        #expect(try await server.terminate() == 0)
    }

    @Test(
        """
        published keys are under each tenant's own prefix: the server's publishing under the tenant's name, or the \
        tenant's own directory
        """
    )
    func publishing() async throws {
        let bed = try TestBed()
        let directory = NSTemporaryDirectory() + "tenants-publish-\(UUID().uuidString)"
        let own = NSTemporaryDirectory() + "tenants-publish-own-\(UUID().uuidString)"
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: own)
        }
        let alpha = TestTenant("alpha")
        let beta = TestTenant("beta", ["publish_dir": own, "publish_url": "https://beta.example/m"])
        let server = try await ServeProcess(
            bed.cliOptions + [
                "--publish-dir", directory, "--publish-url", "https://cdn.example/m", "--tenants",
                try Self.file([alpha, beta]),
            ])
        for tenant in [alpha, beta] {
            let reply = try await Self.enrich(server, bed.url("/media/photo.jpg"), as: tenant)
            let content = try #require(reply.json["content"] as? [String: Any])
            let published = try #require(content["adb_media"] as? String)
            let sha256 = try #require((reply.json["attachments"] as? [[String: Any]])?.first?["sha256"] as? String)
            if tenant.name == "alpha" {
                #expect(published == "https://cdn.example/m/alpha/\(sha256).jpg")
                #expect(FileManager.default.fileExists(atPath: "\(directory)/alpha/\(sha256).jpg"))
            } else {
                #expect(published == "https://beta.example/m/\(sha256).jpg")
                #expect(FileManager.default.fileExists(atPath: "\(own)/\(sha256).jpg"))
                #expect(!FileManager.default.fileExists(atPath: "\(directory)/beta"))
            }
        }
        #expect(try await server.terminate() == 0)
    }

    @Test(
        """
        a tenant's deadline, and the server's cap on it: a request's ?deadline= beyond the tenant's is cut to it
        """
    )
    func deadline() async throws {
        let bed = try TestBed()
        let quick = TestTenant("quick", ["deadline": 0.5])
        let server = try await ServeProcess(bed.cliOptions + ["--tenants", try Self.file([quick])])
        let reply = try await Self.enrich(server, bed.url("/stall"), as: quick, query: "?deadline=20")
        #expect(reply.json["outcome"] as? String == "expired")
        let elapsed = try #require(reply.json["elapsed_ms"] as? Double)
        #expect(elapsed < 15_000, "cut to the tenant's 0.5 s, not the 20 s asked (\(elapsed) ms)")
        #expect(try await server.terminate() == 0)
    }

    @Test(
        """
        over its max_in_flight a tenant gets 429 tenant-in-flight with Retry-After, nothing fetched; over its rate \
        429 rate-limited; other tenants unaffected; /metrics counts them by tenant
        """
    )
    func limits() async throws {
        let bed = try TestBed()
        let narrow = TestTenant("narrow", ["max_in_flight": 1])
        let metered = TestTenant("metered", ["rate": ["per_second": 0.01, "burst": 2]])
        let other = TestTenant("other")
        let server = try await ServeProcess(
            bed.cliOptions + ["--tenants", try Self.file([narrow, metered, other])])
        let slow = Task { try await Self.enrich(server, bed.url("/slow/photo.jpg?ms=1500"), as: narrow) }
        try await waitUntil("the slow payload to be in flight") { bed.origin.exchanges.count == 1 }
        let refused = try await Self.enrich(server, bed.url("/media/logo.png?refused=1"), as: narrow)
        #expect(refused.status == 429)
        #expect(refused.headers["retry-after"] == "1")
        #expect(refused.json["code"] as? String == "tenant-in-flight")
        let meanwhile = try await Self.enrich(server, bed.url("/media/logo.png"), as: other)
        #expect(meanwhile.status == 200)
        #expect(meanwhile.json["outcome"] as? String == "complete")
        #expect(try await slow.value.json["outcome"] as? String == "complete")
        #expect(!bed.origin.requestLog.contains("/media/logo.png?refused=1"), "the refused payload was not fetched")
        for _ in 1...2 {
            #expect(try await Self.enrich(server, bed.url("/media/photo.jpg"), as: metered).status == 200)
        }
        let limited = try await Self.enrich(server, bed.url("/media/photo.jpg"), as: metered)
        #expect(limited.status == 429)
        #expect(limited.json["code"] as? String == "rate-limited")
        let retry = try #require(limited.headers["retry-after"].flatMap { Int($0) })
        #expect((90...100).contains(retry), "a token every 100 s: \(retry)")
        #expect(try await Self.enrich(server, bed.url("/media/photo.jpg"), as: other).status == 200)
        let metrics = try await server.request("GET", "/metrics").text
        #expect(metrics.contains(#"richpush_tenant_rejections_total{tenant="narrow",code="tenant-in-flight"} 1"#))
        #expect(metrics.contains(#"richpush_tenant_rejections_total{tenant="metered",code="rate-limited"} 1"#))
        #expect(metrics.contains(#"richpush_payloads_total{tenant="other",outcome="complete"} 2"#))
        #expect(metrics.contains(#"richpush_payloads_total{tenant="metered",outcome="complete"} 2"#))
        #expect(metrics.contains(#"richpush_tenant_in_flight{tenant="narrow"} 0"#))
        // A refusal answered from the head names its tenant in the access log, as a payload served does.
        try await waitUntil("the access log lines of the two refusals") {
            server.logLines.filter { $0["status"] as? Int == 429 }.count == 2
        }
        let refusals = server.logLines.filter { $0["status"] as? Int == 429 }.map { $0["tenant"] as? String }
        #expect(refusals == ["narrow", "metered"])
        #expect(try await server.terminate() == 0)
    }

    @Test(
        """
        one tenant flooded with slow payloads, beyond its max_in_flight: another tenant's requests all complete \
        meanwhile, while the flood's are still in flight
        """
    )
    func flood() async throws {
        let bed = try TestBed()
        let noisy = TestTenant("noisy", ["max_in_flight": 4])
        let quiet = TestTenant("quiet")
        let server = try await ServeProcess(bed.cliOptions + ["--tenants", try Self.file([noisy, quiet])])
        // Twelve slow payloads, each its own URL (no single flight joins them): four admitted, the rest 429.
        let flood = (0..<12).map { index in
            Task { try await Self.enrich(server, bed.url("/slow/photo.jpg?ms=4000&n=\(index)"), as: noisy) }
        }
        try await waitUntil("four slow payloads in flight") {
            bed.origin.exchanges.filter { $0.target.hasPrefix("/slow/") }.count == 4
        }
        for index in 0..<6 {
            let reply = try await Self.enrich(server, bed.url("/media/logo.png?q=\(index)"), as: quiet)
            #expect(reply.status == 200)
            #expect(reply.json["outcome"] as? String == "complete")
        }
        let metrics = try await server.request("GET", "/metrics").text
        #expect(
            metrics.contains(#"richpush_tenant_in_flight{tenant="noisy"} 4"#),
            "the flood was still in flight when the quiet tenant's requests completed")
        var statuses: [Int] = []
        for task in flood { statuses.append(try await task.value.status) }
        #expect(statuses.filter { $0 == 200 }.count == 4)
        #expect(statuses.filter { $0 == 429 }.count == 8)
        #expect(try await server.terminate() == 0)
    }

    @Test(
        """
        SIGHUP re-reads the file: a request in flight finishes under the settings it started with, new ones use the \
        new settings, a removed tenant's token stops at once
        """
    )
    func reload() async throws {
        let bed = try TestBed()
        let alpha = TestTenant("alpha")
        let beta = TestTenant("beta")
        let file = try Self.file([alpha, beta])
        let server = try await ServeProcess(bed.cliOptions + ["--tenants", file])
        let inFlight = Task { try await Self.enrich(server, bed.url("/slow/photo.jpg?ms=2000"), as: alpha) }
        try await waitUntil("the slow payload to be in flight") { bed.origin.exchanges.count == 1 }
        // alpha may no longer reach loopback; beta is gone.
        var changed = alpha
        changed.fields = ["allow_network": [] as [String]]
        _ = try Self.file([changed], at: file)
        server.process.signal(SIGHUP)
        try await waitUntil("the reload's log line") { server.logLines.contains { $0["reload"] != nil } }
        let line = try #require(server.logLines.first { $0["reload"] != nil })
        #expect(line["reload"] as? String == "done")
        #expect(line["tenants"] as? Int == 1)
        #expect(try await Self.enrich(server, bed.url("/media/photo.jpg"), as: beta).status == 401)
        let now = try await Self.enrich(server, bed.url("/media/photo.jpg"), as: alpha)
        #expect(Self.codes(now) == ["blocked-address"])
        let started = try await inFlight.value
        #expect(started.status == 200)
        #expect(started.json["outcome"] as? String == "complete", "under the settings it started with")
        #expect(try await server.terminate() == 0)
    }

    @Test(
        """
        a reload between a request's headers and its body: the request runs under the tenant its headers selected, \
        the next one under the new settings
        """
    )
    func reloadBetweenHeadAndBody() async throws {
        let bed = try TestBed()
        let alpha = TestTenant("alpha")
        let file = try Self.file([alpha])
        let server = try await ServeProcess(bed.cliOptions + ["--tenants", file])
        let body = Self.payload(bed.url("/media/photo.jpg"))
        let connection = try HTTPConnection(port: server.port)
        let head =
            "POST /v1/enrich HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(alpha.token)\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
        try connection.send(Array(head.utf8))
        // The head is in once the tenant's slot is taken (at the headers, before a byte of the body).
        try await waitUntil("the request's head to be admitted") {
            let metrics = (try? HTTPConnection(port: server.port).exchange("GET", "/metrics").text) ?? ""
            return metrics.contains(#"richpush_tenant_in_flight{tenant="alpha"} 1"#)
        }
        // alpha may no longer reach loopback.
        var changed = alpha
        changed.fields = ["allow_network": [] as [String]]
        _ = try Self.file([changed], at: file)
        server.process.signal(SIGHUP)
        try await waitUntil("the reload's log line") { server.logLines.contains { $0["reload"] != nil } }
        try connection.send(body)
        let started = try await offPool { try connection.readResponse(within: .seconds(30)) }
        #expect(started.status == 200)
        #expect(started.json["outcome"] as? String == "complete", "under the tenant its headers selected")
        let now = try await Self.enrich(server, bed.url("/media/photo.jpg"), as: alpha)
        #expect(Self.codes(now) == ["blocked-address"])
        #expect(try await server.terminate() == 0)
    }

    @Test(
        """
        a reload that changes a tenant but not its bounds keeps its in-flight count and its rate's bucket; a name \
        removed and given to another tenant later serves nothing stored for the first
        """)
    func reloadKeepsBounds() async throws {
        let bed = try TestBed()
        let narrow = TestTenant("narrow", ["max_in_flight": 1, "rate": ["per_second": 0.01, "burst": 2]])
        let shop = TestTenant("shop")
        let file = try Self.file([narrow, shop])
        let server = try await ServeProcess(bed.cliOptions + ["--tenants", file])
        let stored = try await Self.enrich(server, bed.url("/media/photo.jpg"), as: shop)
        let path = try #require((stored.json["attachments"] as? [[String: Any]])?.first?["path"] as? String)
        let name = path.split(separator: "/").suffix(2).joined(separator: "/")
        let slow = Task { try await Self.enrich(server, bed.url("/slow/photo.jpg?ms=2000"), as: narrow) }
        try await waitUntil("the slow payload to be in flight") { bed.origin.exchanges.count == 2 }
        // narrow's deadline changes (a new engine), its bounds do not; shop is removed.
        var changed = narrow
        changed.fields["deadline"] = 20
        _ = try Self.file([changed], at: file)
        server.process.signal(SIGHUP)
        try await waitUntil("the reload's log line") { server.logLines.contains { $0["reload"] != nil } }
        let refused = try await Self.enrich(server, bed.url("/media/logo.png"), as: narrow)
        #expect(refused.status == 429, "the request in flight still counts")
        #expect(refused.json["code"] as? String == "tenant-in-flight")
        #expect(try await slow.value.status == 200)
        // The slow payload took one of the burst of 2 before the reload (the refusal maybe another): the same bucket
        // lets one more through at most, where a new one would let two.
        var after: [Int] = []
        for _ in 1...2 { after.append(try await Self.enrich(server, bed.url("/media/logo.png"), as: narrow).status) }
        #expect(after.contains(429), "the bucket kept: \(after)")
        // `shop` again, another app's token: the first shop's attachment is not its.
        let newShop = TestTenant("shop")
        _ = try Self.file([changed, newShop], at: file)
        server.process.signal(SIGHUP)
        try await waitUntil("the second reload's log line") {
            server.logLines.filter { $0["reload"] != nil }.count == 2
        }
        let old = try await server.request("GET", "/v1/attachments/\(name)", headers: newShop.authorization)
        #expect(old.status == 404)
        let metrics = try await server.request("GET", "/metrics").text
        #expect(!metrics.contains(#"richpush_payloads_total{tenant="shop",outcome="complete"} 1"#), "counts afresh")
        #expect(try await server.terminate() == 0)
    }

    @Test("a tenants file that is a FIFO, held open by a writer, is refused at once at the start and at a reload")
    func fifoFile() async throws {
        let path = NSTemporaryDirectory() + "tenants-\(UUID().uuidString).fifo"
        #expect(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        // A writer holding it open (O_RDWR: opens without waiting for a reader), as long as the test.
        let writer = open(path, O_RDWR | O_NONBLOCK)
        #expect(writer >= 0)
        defer { close(writer) }
        let run = try await ServeTokenTests.serve(["--listen", "127.0.0.1:0", "--tenants", path])
        #expect(run.status == 64, "status \(run.status) (124: it started or hung)")
        #expect(run.stderr.contains("--tenants: \(path): not a regular file"), "\(run.stderr)")

        let bed = try TestBed()
        let alpha = TestTenant("alpha")
        let file = try Self.file([alpha])
        let server = try await ServeProcess(bed.cliOptions + ["--tenants", file])
        #expect(rename(path, file) == 0)
        server.process.signal(SIGHUP)
        try await waitUntil("the reload's log line") { server.logLines.contains { $0["reload"] != nil } }
        let line = try #require(server.logLines.first { $0["reload"] != nil })
        #expect(line["reload"] as? String == "refused")
        #expect((line["error"] as? String)?.contains("not a regular file") == true, "\(line)")
        #expect(try await Self.enrich(server, bed.url("/media/photo.jpg"), as: alpha).status == 200)
        #expect(try await server.terminate() == 0)
    }

    @Test("a reload whose file does not validate is refused with a log line naming the error; the old tenants stay")
    func badReload() async throws {
        let bed = try TestBed()
        let alpha = TestTenant("alpha")
        let file = try Self.file([alpha])
        let server = try await ServeProcess(bed.cliOptions + ["--tenants", file])
        _ = try Self.file([TestTenant("alpha", ["allow_network": ["not-a-range"]])], at: file)
        server.process.signal(SIGHUP)
        try await waitUntil("the reload's log line") { server.logLines.contains { $0["reload"] != nil } }
        let line = try #require(server.logLines.first { $0["reload"] != nil })
        #expect(line["reload"] as? String == "refused")
        let error = try #require(line["error"] as? String)
        #expect(
            error.contains("tenant 'alpha': allow_network: 'not-a-range' is not an address or CIDR range"), "\(error)")
        let reply = try await Self.enrich(server, bed.url("/media/photo.jpg"), as: alpha)
        #expect(reply.status == 200)
        #expect(reply.json["outcome"] as? String == "complete")
        #expect(try await server.terminate() == 0)
    }

    /// A tenants file that does not validate, and what the refusal must say.
    struct BadFile: CustomTestStringConvertible, Sendable {
        let label: String
        let entries: @Sendable (TestTenant) -> [[String: Any]]
        let message: String
        var testDescription: String { label }
    }

    static let badFiles: [BadFile] = [
        BadFile(
            label: "a range that is none", entries: { [$0.entry.merging(["allow_network": ["10.0.0.0/33"]]) { $1 }] },
            message: "tenant 'alpha': allow_network: '10.0.0.0/33' is not an address or CIDR range"),
        BadFile(
            label: "a port out of range", entries: { [$0.entry.merging(["allow_port": ["70000"]]) { $1 }] },
            message: "tenant 'alpha': allow_port:"),
        BadFile(
            label: "a deadline beyond the server's", entries: { [$0.entry.merging(["deadline": 60]) { $1 }] },
            message: "tenant 'alpha': deadline: 60.0 s is beyond the server's --deadline, 25.0 s"),
        BadFile(
            label: "an unknown field", entries: { [$0.entry.merging(["allow-http": true]) { $1 }] },
            message: "tenant 'alpha': allow-http: unknown field"),
        BadFile(
            label: "a flag given a string", entries: { [$0.entry.merging(["allow_http": "yes"]) { $1 }] },
            message: "tenant 'alpha': allow_http: expected true or false"),
        BadFile(
            label: "the server's own option", entries: { [$0.entry.merging(["attachments_dir": "/tmp"]) { $1 }] },
            message: "tenant 'alpha': attachments_dir: is the server's, for every tenant"),
        BadFile(
            label: "a token in clear", entries: { [$0.entry.merging(["token_sha256": $0.token]) { $1 }] },
            message: "tenant 'alpha': token_sha256: expected the 64 lowercase hex digits"),
        BadFile(
            label: "a bad rate", entries: { [$0.entry.merging(["rate": ["per_second": 0, "burst": 1]]) { $1 }] },
            message: "tenant 'alpha': rate: expected {"),
        BadFile(
            label: "a rate too small to wait for (it overflowed a Duration, ending the process)",
            entries: { [$0.entry.merging(["rate": ["per_second": 1e-30, "burst": 1]]) { $1 }] },
            message: "tenant 'alpha': rate: expected {\"per_second\": a number from 0.000001"),
        BadFile(
            label: "a bad max_in_flight", entries: { [$0.entry.merging(["max_in_flight": 0]) { $1 }] },
            message: "tenant 'alpha': max_in_flight: expected a whole number"),
        BadFile(
            label: "two tenants of one name", entries: { [$0.entry, TestTenant("alpha").entry] },
            message: "tenant 'alpha': name: given to two tenants"),
        BadFile(
            label: "two tenants of one token",
            entries: { [$0.entry, $0.entry.merging(["name": "beta"]) { $1 }] },
            message: "tenant 'beta': token_sha256: the same as another tenant's"),
        BadFile(
            label: "a name that is no name", entries: { [$0.entry.merging(["name": "../up"]) { $1 }] },
            message: "tenants[0]: name: expected 1 to 64 letters"),
        BadFile(
            label: "an unknown convention", entries: { [$0.entry.merging(["convention": ["nope"]]) { $1 }] },
            message: "tenant 'alpha': convention: unknown convention 'nope'"),
    ]

    @Test(
        "a tenants file that does not validate: the server does not start, and says which tenant and field",
        arguments: badFiles)
    func refused(_ bad: BadFile) async throws {
        let path = NSTemporaryDirectory() + "tenants-\(UUID().uuidString).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let data = try JSONSerialization.data(withJSONObject: ["tenants": bad.entries(TestTenant("alpha"))])
        try data.write(to: URL(fileURLWithPath: path))
        let run = try await ServeTokenTests.serve(["--listen", "127.0.0.1:0", "--tenants", path])
        #expect(run.status == 64, "status \(run.status) (124: it started)")
        #expect(run.stderr.contains("--tenants \(path): \(bad.message)"), "\(run.stderr)")
    }

    @Test("docs/service.md's example file starts a server, and each of its tenants is served by its token")
    func documentedExample() async throws {
        let readme = try String(
            contentsOfFile: FixtureRoutes.fixturesDirectory + "/../docs/service.md", encoding: .utf8)
        let start = try #require(readme.range(of: "A complete file (`tenants.json`):\n\n```json\n"))
        let end = try #require(readme[start.upperBound...].range(of: "```\n"))
        let scratch = NSTemporaryDirectory() + "tenants-example-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try Data(#"{"conventions":[{"name":"news_media","url":["news","image"]}]}"#.utf8).write(
            to: URL(fileURLWithPath: scratch + "/conventions.json"))
        let text = readme[start.upperBound..<end.lowerBound]
            .replacingOccurrences(of: "/etc/richpush/news-ca.pem", with: "/etc/ssl/certs/ca-certificates.crt")
            .replacingOccurrences(of: "/etc/richpush/news-conventions.json", with: scratch + "/conventions.json")
            .replacingOccurrences(of: "/srv/cdn/news", with: scratch + "/news")
        try Data(text.utf8).write(to: URL(fileURLWithPath: scratch + "/tenants.json"))
        let bed = try TestBed()
        let server = try await ServeProcess(
            bed.cliOptions + [
                "--tenants", scratch + "/tenants.json", "--publish-dir", scratch + "/all", "--publish-url",
                "https://cdn.example/m",
            ])
        for (token, published) in [
            ("test", "https://cdn.example/m/shop/"), ("news-token", "https://cdn.news.example/m/"),
        ] {
            let reply = try await server.request(
                "POST", "/v1/enrich", headers: [("Authorization", "Bearer \(token)")],
                body: Self.payload(bed.url("/media/photo.jpg")))
            #expect(reply.status == 200)
            let content = reply.json["content"] as? [String: Any]
            let url = content?["adb_media"] as? String
            if token == "test" {
                #expect(reply.json["outcome"] as? String == "complete")
                #expect(url?.hasPrefix(published) == true, "\(reply.text)")
            } else {
                // news may reach 10.20.0.0/16, ports 8080 and 9000-9100, only: the loopback origin is refused.
                #expect(
                    Self.codes(reply) == ["blocked-address"] || Self.codes(reply) == ["blocked-port"], "\(reply.text)")
            }
        }
        #expect(try await server.terminate() == 0)
    }

    @Test("--tenants and --token-file together are refused: one way to authenticate")
    func exclusive() async throws {
        let token = try ServeTokenTests.tokenFile("0123456789abcdef0123456789abcdef\n", mode: 0o600)
        defer { try? FileManager.default.removeItem(atPath: token) }
        let tenants = try Self.file([TestTenant("alpha")])
        let run = try await ServeTokenTests.serve(
            ["--listen", "127.0.0.1:0", "--tenants", tenants, "--token-file", token])
        #expect(run.status == 64)
        #expect(run.stderr.contains("--tenants and --token-file: give one, not both"), "\(run.stderr)")
    }
}
