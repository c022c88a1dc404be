import FixtureOrigin
import Foundation
import Testing

@testable import RichPush

/// An origin answering each path with a 302 to the Location given for it, and everything else with a JPEG
/// carrying the given extra headers.
private func redirectingOrigin(
    host: String = "127.0.0.1", locations: [String: String], headers: [(String, String)] = []
) throws -> HTTPOrigin {
    let photo = fixture("photo.jpg")
    return try HTTPOrigin(host: host) { request in
        if let location = locations[request.path] {
            return .init(status: 302, headers: [("Location", location)], body: .bytes(Array("moved\n".utf8)))
        }
        return .init(headers: [("Content-Type", "image/jpeg")] + headers, body: .bytes(photo))
    }
}

/// The failure of `result`, or nil after recording that it succeeded.
private func failure(
    of result: Result<FetchedMedia, FetchFailure>, sourceLocation: SourceLocation = #_sourceLocation
) -> FetchFailure? {
    guard case .failure(let failure) = result else {
        Issue.record("expected a refusal, got \(result)", sourceLocation: sourceLocation)
        return nil
    }
    return failure
}

@Suite("Every redirect hop gets the checks of the first URL, before any connection")
struct RedirectTests {
    @Test(
        """
        a redirect to a URL with credentials, a 60 KB URL or one with a space is bad-url, and its target never sees a \
        connection
        """,
        arguments: ["credentials", "long", "space", "control"])
    func refusedLocation(kind: String) async throws {
        let bed = try TestBed()
        let target = try HTTPOrigin(handler: FixtureRoutes.handler())
        defer { target.stop() }
        let base = "http://127.0.0.1:\(target.port)"
        let location =
            switch kind {
            case "credentials": "http://user:secret@127.0.0.1:\(target.port)/media/photo.jpg"
            case "long": base + "/media/photo.jpg?" + String(repeating: "a", count: 60_000)
            case "space": base + "/media/photo .jpg"
            default: base + "/media/photo.jpg\u{7F}"
            }
        let origin = try redirectingOrigin(locations: ["/go": location])
        defer { origin.stop() }
        try await withFetcher(bed.configuration) { fetcher in
            let result = await fetcher.fetch(origin.url("/go"), timeout: .seconds(10))
            guard let failure = failure(of: result) else { return }
            #expect(failure.code == .badURL, "\(failure)")
            #expect(target.connectionCount == 0, "the redirect's target was connected to")
            #expect(bed.filesOnDisk().isEmpty)
        }
    }

    @Test("a relative redirect within the limits is still followed, to the same bytes")
    func relativeRedirect() async throws {
        let bed = try TestBed()
        let origin = try redirectingOrigin(locations: ["/a": "/b", "/b": "../c?x=1"])
        defer { origin.stop() }
        try await withFetcher(bed.configuration) { fetcher in
            let media = try await fetcher.fetch(origin.url("/a"), timeout: .seconds(10)).get()
            #expect(media.type == .jpeg)
            #expect(origin.requestLog == ["/a", "/b", "/c?x=1"])
        }
    }

    @Test(
        """
        0.0.0.0 and :: reach this host: with 0.0.0.0/0 open and 127.0.0.1 closed, a redirect to 0.0.0.0 is refused \
        unconnected
        """
    )
    func unspecifiedIsLoopback() async throws {
        let target = try HTTPOrigin(handler: FixtureRoutes.handler())
        defer { target.stop() }
        let origin = try redirectingOrigin(
            host: "127.0.0.2", locations: ["/go": "http://0.0.0.0:\(target.port)/media/photo.jpg"])
        defer { origin.stop() }
        let bed = try TestBed {
            $0.network.addressPolicy = AddressPolicy(
                allowed: [CIDRRange("0.0.0.0/0")!], denied: [CIDRRange("127.0.0.1/32")!])
        }
        try await withFetcher(bed.configuration) { fetcher in
            let result = await fetcher.fetch(origin.url("/go"), timeout: .seconds(10))
            guard let failure = failure(of: result) else { return }
            #expect(failure.code == .blockedAddress, "\(failure)")
            #expect(target.connectionCount == 0, "the loopback listener accepted a connection")

            let policy = AddressPolicy(
                allowed: [CIDRRange("0.0.0.0/0")!, CIDRRange("::/0")!],
                denied: [CIDRRange("127.0.0.1/32")!, CIDRRange("::1/128")!])
            for address in ["0.0.0.0", "0.1.2.3", "::", "::ffff:0.0.0.0"] {
                #expect(policy.refusal(of: IPAddress(address)!) != nil, "\(address) admitted")
            }
            #expect(policy.refusal(of: IPAddress("8.8.8.8")!) == nil)
            // Loopback opened: 0.0.0.0 is admitted only when its own range is open too.
            let loopbackOpen = AddressPolicy(allowed: [CIDRRange("127.0.0.0/8")!])
            #expect(loopbackOpen.refusal(of: IPAddress("0.0.0.0")!) != nil)
            #expect(
                AddressPolicy(allowed: [CIDRRange("127.0.0.0/8")!, CIDRRange("0.0.0.0/8")!]).refusal(
                    of: IPAddress("0.0.0.0")!) == nil)
        }
    }

    @Test("validators holding control characters are dropped, never sent back; good ones are kept")
    func unsafeValidators() async throws {
        let bed = try TestBed()
        let cases: [(etag: String, lastModified: String, keeps: Bool)] = [
            ("\"a\rX-Injected: 1\"", "Tue, 01 Dec 2026\r00:00:00 GMT", false),
            ("\"a\u{01}b\"", "Tue, 01 Dec 2026 00:00:00\u{7F}GMT", false),
            ("\"abc-123\"", "Tue, 01 Dec 2026 00:00:00 GMT", true),
            ("W/\"weak\"", "Tue, 01 Dec 2026 00:00:00 GMT", true),
        ]
        try await withFetcher(bed.configuration) { fetcher in
            for (etag, lastModified, keeps) in cases {
                let origin = try redirectingOrigin(
                    locations: [:], headers: [("ETag", etag), ("Last-Modified", lastModified)])
                defer { origin.stop() }
                let media = try await fetcher.fetch(origin.url("/photo.jpg"), timeout: .seconds(10)).get()
                #expect(media.validators.etag == (keeps ? etag : nil), "\(etag.debugDescription)")
                #expect(
                    media.validators.lastModified == (keeps ? lastModified : nil), "\(lastModified.debugDescription)")
            }
        }
    }

    @Test("a redirect whose body runs past 64 KiB is bad-response")
    func longRedirectBody() async throws {
        let bed = try TestBed()
        let origin = try HTTPOrigin { request in
            if request.path == "/go" {
                return .init(
                    status: 302, headers: [("Location", "/media/photo.jpg")],
                    body: .generated(prefix: [], total: 1 << 20))
            }
            return .init(headers: [("Content-Type", "image/jpeg")], body: .bytes(fixture("photo.jpg")))
        }
        defer { origin.stop() }
        try await withFetcher(bed.configuration) { fetcher in
            let result = await fetcher.fetch(origin.url("/go"), timeout: .seconds(10))
            guard let failure = failure(of: result) else { return }
            #expect(failure.code == .badResponse, "\(failure)")
            #expect(origin.requestLog == ["/go"])
        }
    }
}
