import FixtureOrigin
import Foundation
import Testing

@testable import RichPush

/// Every way a fetch is refused or fails ends with its own code and leaves nothing on disk.
@Suite("Refusals and failures")
struct RefusalTests {
    func fetch(
        _ path: String, on bed: TestBed, timeout: Duration = .seconds(10)
    ) async throws -> FetchFailure {
        try await fetchURL(bed.url(path), on: bed, timeout: timeout)
    }

    func fetchURL(_ url: String, on bed: TestBed, timeout: Duration = .seconds(10)) async throws -> FetchFailure {
        try await withFetcher(bed.configuration) { fetcher in
            let result = await fetcher.fetch(url, timeout: timeout)
            guard case .failure(let failure) = result else {
                Issue.record("expected a failure for \(url), got \(result)")
                return FetchFailure(.network, "unexpected success")
            }
            #expect(bed.entriesOnDisk().isEmpty, "nothing may be left on disk for \(url)")
            return failure
        }
    }

    @Test(
        "HTTP errors are failures even with an image body",
        arguments: ["/status/404?file=photo.jpg", "/status/500?file=photo.jpg", "/status/403", "/media/missing.jpg"])
    func httpStatus(path: String) async throws {
        let bed = try TestBed()
        let failure = try await fetch(path, on: bed)
        #expect(failure.code == .httpStatus)
    }

    @Test("an unrequested 206 is refused")
    func partialContent() async throws {
        let bed = try TestBed()
        #expect(try await fetch("/partial/photo.jpg", on: bed).code == .httpStatus)
    }

    @Test("an empty 200, or a 204, is empty-body", arguments: ["/empty", "/status/204"])
    func emptyBody(path: String) async throws {
        let bed = try TestBed()
        #expect(try await fetch(path, on: bed).code == .emptyBody)
    }

    @Test("two redirects are followed, to the same file")
    func redirects() async throws {
        let bed = try TestBed()
        try await withFetcher(bed.configuration) { fetcher in
            let media = try await fetcher.fetch(bed.url("/redirect/2?to=/media/anim.gif"), timeout: .seconds(10)).get()
            #expect(media.type == .gif)
            #expect(media.bytes == fixture("anim.gif").count)
        }
    }

    @Test("more than three redirects, or a loop, is too-many-redirects", arguments: ["/redirect/4", "/redirect-loop"])
    func tooManyRedirects(path: String) async throws {
        let bed = try TestBed()
        #expect(try await fetch(path, on: bed).code == .tooManyRedirects)
    }

    @Test("a 3xx without Location is an http-status failure")
    func noLocation() async throws {
        let bed = try TestBed()
        let failure = try await fetch("/no-location", on: bed)
        #expect(failure.code == .httpStatus)
        #expect(failure.detail.contains("302"))
    }

    @Test(
        "a URL without a scheme is bad-url, not a scheme made of what comes before its first colon; others are refused",
        arguments: [
            ("//127.0.0.1:1/x.jpg", "bad-url"), ("127.0.0.1:1/x.jpg", "bad-url"), ("/x:y.jpg", "bad-url"),
            ("1http://127.0.0.1/x", "bad-url"), ("ftp://127.0.0.1/x.jpg", "blocked-scheme"),
            ("git+ssh://127.0.0.1/x", "blocked-scheme"), ("localhost:1/x.jpg", "blocked-scheme"),
        ])
    func schemes(url: String, code: String) async throws {
        let bed = try TestBed()
        let failure = try await fetchURL(url, on: bed)
        #expect(failure.code.rawValue == code, "\(url): \(failure)")
        if code == "bad-url" { #expect(failure.detail == "the URL has no scheme") }
    }

    @Test(
        "a redirect to another scheme is blocked-scheme",
        arguments: ["file:///etc/passwd", "ftp://127.0.0.1/x.jpg", "gopher://127.0.0.1:70/x", "dict://127.0.0.1/x"])
    func redirectScheme(target: String) async throws {
        let bed = try TestBed()
        let failure = try await fetch(
            "/redirect-to?url=\(target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)", on: bed)
        #expect(failure.code == .blockedScheme)
    }

    @Test(
        """
        an answer that is not HTTP is bad-response, not blocked-scheme (curl: "Received HTTP/0.9 when not allowed"), \
        and nothing is left; the same origin's redirect to gopher: stays blocked-scheme
        """,
        arguments: [
            [0xFF, 0xD8, 0xFF, 0xE0] + Array("garbage that is no status line\r\n\r\n".utf8),
            Array("SSH-2.0-OpenSSH_9.2\r\n".utf8),
        ] as [[UInt8]])
    func notHTTP(answer: [UInt8]) async throws {
        let bed = try TestBed()
        let raw = try HTTPOrigin { request in
            if request.path == "/gopher" {
                return HTTPOrigin.Response(status: 302, headers: [("Location", "gopher://127.0.0.1:70/x")])
            }
            return HTTPOrigin.Response(body: .raw(answer))
        }
        defer { raw.stop() }
        let failure = try await fetchURL(raw.url("/x.jpg"), on: bed)
        #expect(failure.code == .badResponse, "\(failure)")
        #expect(failure.detail.contains("HTTP/0.9"), "\(failure)")
        // Asked once: on a new connection such an answer is the origin's own (on a reused one, the request would be
        // made again on a new connection: HostileTests.lateExcessThenNextFetch).
        #expect(raw.exchanges.filter { $0.target == "/x.jpg" }.count == 1)
        #expect(try await fetchURL(raw.url("/gopher"), on: bed).code == .blockedScheme)
    }

    // A redirect from https to http: TLSTests.redirectToHTTP.
    @Test("plain http is refused when http is not allowed, before any socket opens")
    func plainHTTP() async throws {
        let bed = try TestBed { $0.network.allowHTTP = false }
        let failure = try await fetch("/media/photo.jpg", on: bed)
        #expect(failure.code == .blockedScheme)
        #expect(failure.detail.contains("network.allowHTTP"))
        #expect(bed.origin.connectionCount == 0)
    }

    @Test(
        "schemes other than http(s) are refused before any socket opens",
        arguments: [
            "file:///etc/passwd", "ftp://media.test/x.jpg", "data:image/png;base64,iVBORw0KGgo=",
            "gopher://media.test/1", "ldap://media.test/", "smb://media.test/share", "javascript:alert(1)",
        ])
    func schemes(url: String) async throws {
        let bed = try TestBed()
        let failure = try await fetchURL(url, on: bed)
        #expect(failure.code == .blockedScheme)
        #expect(bed.origin.connectionCount == 0)
    }

    @Test(
        "malformed URLs, credentials, control characters and overlong URLs are bad-url",
        arguments: [
            "", "media.test/x.jpg", "http://", "http://user:pw@media.test/x.jpg", "http://media.test/a b.jpg",
            "http://media.test/a\u{01}.jpg", "http://media.test/" + String(repeating: "a", count: 2100),
        ])
    func badURL(url: String) async throws {
        let bed = try TestBed()
        let failure = try await fetchURL(url, on: bed)
        #expect(failure.code == .badURL)
    }

    @Test("loopback is refused unless opened, and nothing connects")
    func loopbackRefused() async throws {
        let bed = try TestBed { $0.network.addressPolicy = AddressPolicy() }
        let failure = try await fetch("/media/photo.jpg", on: bed)
        #expect(failure.code == .blockedAddress)
        #expect(failure.detail.contains("loopback"))
        #expect(bed.origin.connectionCount == 0)
    }

    @Test("a name pinned to a private address is never connected to")
    func privateByName() async throws {
        let bed = try TestBed { $0.network.resolve = ["private.test:80:10.0.0.5"] }
        let failure = try await fetchURL("http://private.test/x.jpg", on: bed)
        #expect(failure.code == .blockedAddress)
        #expect(failure.detail.contains("10.0.0.5"))
    }

    @Test("a refused port is a network failure with curl's message")
    func connectionRefused() async throws {
        let bed = try TestBed()
        let closed = try RefusingPort()
        let port = closed.port
        defer { withExtendedLifetime(closed) {} }
        let failure = try await fetchURL("http://127.0.0.1:\(port)/x.jpg", on: bed)
        #expect(failure.code == .network)
        #expect(failure.detail.contains("onnect"), "curl's message: \(failure.detail)")
    }

    @Test("an image over 10 MB stops at the cap")
    func imageCap() async throws {
        let bed = try TestBed()
        let failure = try await fetch("/generated?prefix=photo.jpg&bytes=10000001&nolength=1", on: bed)
        #expect(failure.code == .tooLarge)
        #expect(failure.detail.contains("10000000"))
    }

    @Test("an image of exactly the cap is accepted")
    func imageAtCap() async throws {
        var limits = Enricher.Configuration.Limits()
        limits.imageBytes = 200_000
        let capped = limits
        let bed = try TestBed { $0.limits = capped }
        try await withFetcher(bed.configuration) { fetcher in
            let media = try await fetcher.fetch(
                bed.url("/generated?prefix=photo.jpg&bytes=200000"), timeout: .seconds(10)
            ).get()
            #expect(media.bytes == 200_000)
            let over = await fetcher.fetch(bed.url("/generated?prefix=photo.jpg&bytes=200001"), timeout: .seconds(10))
            guard case .failure(let failure) = over else {
                Issue.record("one byte over the cap was accepted: \(over)")
                return
            }
            #expect(failure.code == .tooLarge)
        }
    }

    @Test("audio over 5 MB stops at the cap, even when the length is declared honestly")
    func audioCap() async throws {
        let bed = try TestBed()
        let failure = try await fetch("/generated?prefix=chime.wav&bytes=5000001", on: bed)
        #expect(failure.code == .tooLarge)
        #expect(failure.detail.contains("audio"))
    }

    @Test("a declared length over every cap is refused at once")
    func declaredOverCap() async throws {
        let bed = try TestBed()
        // Declares 60 MB but would send only 10 KB: refused from the header, not after reading.
        let failure = try await fetch("/generated?prefix=clip.mp4&bytes=10000&declare=60000000", on: bed)
        #expect(failure.code == .tooLarge)
        #expect(failure.detail.hasPrefix("declares"), "\(failure.detail)")
    }

    @Test("a body shorter than its Content-Length is bad-response, not a file")
    func shortBody() async throws {
        let bed = try TestBed()
        let failure = try await fetch("/generated?prefix=photo.jpg&bytes=10000&declare=20000", on: bed)
        #expect(failure.code == .badResponse)
    }

    @Test("a stalled body hits the low-speed abort as timeout")
    func lowSpeed() async throws {
        let bed = try TestBed { $0.network.lowSpeedWindow = .seconds(1) }
        let start = ContinuousClock.now
        // Ended by the low-speed rule (timeout), not the 10 s deadline (expired), and not before its window.
        let failure = try await fetch("/stall", on: bed)
        #expect(failure.code == .timeout)
        #expect(ContinuousClock.now - start >= .seconds(1))
    }

    @Test("an attachments root that is a file is refused when the fetcher is made, naming it")
    func storeFailed() async throws {
        let file = NSTemporaryDirectory() + "richpush-not-a-dir-" + UUID().uuidString
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let bed = try TestBed { $0.store = AttachmentStore(root: file) }
        let error = #expect(throws: FetcherError.self) { try Fetcher(configuration: bed.configuration) }
        #expect(error?.detail.contains(file) == true)
        #expect(error?.detail.contains("not a directory") == true)
    }
}
