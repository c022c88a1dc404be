import Foundation
import RichPush
import Testing

// This file imports RichPush without @testable: what it uses is public API, as a package depending on RichPush
// sees it. The convention below is docs/library.md's example, word for word.

/// Acme's push service puts its image at `acme.media.url` and its declared type at `acme.media.type`.
struct AcmeConvention: MediaConvention {
    var name: String { "acme" }

    func scan(_ payload: PushPayload) -> ConventionScan {
        var scan = ConventionScan()
        let hint = scan.value(at: ["acme", "media", "type"], in: payload)?.stringValue
        scan.take(
            scan.value(at: ["acme", "media", "url"], in: payload), field: "acme.media.url", convention: name,
            identifier: "hero", typeHint: hint)
        return scan
    }
}

@Suite("Public API: what a package depending on RichPush can build")
struct PublicAPITests {
    @Test("docs/library.md's custom convention finds its reference and the media is attached")
    func customConvention() async throws {
        let bed = try TestBed()
        var configuration = bed.configuration
        configuration.conventions.register(AcmeConvention())
        let enricher = try Enricher(configuration: configuration)
        let text =
            #"{"aps":{"mutable-content":1},"acme":{"media":{"url":"\#(bed.url("/media/photo.jpg"))","#
            + #""type":"image/jpeg"}}}"#
        let result = await enricher.enrich(try PushPayload(parsing: Array(text.utf8)), timeout: .seconds(10))
        await enricher.shutdown()
        #expect(result.outcome == .complete)
        #expect(result.attachments.map(\.convention) == ["acme"])
        #expect(result.attachments.first?.typeHint == "image/jpeg")
        // A field of the wrong type is the convention's bad-reference problem, not a crash; a generic root key
        // (`data`) holding another value is another sender's use of the name.
        var scan = ConventionScan()
        _ = scan.value(at: ["acme", "media", "url"], in: try PushPayload(parsing: Array(#"{"acme":[1]}"#.utf8)))
        #expect(scan.problems.map(\.code) == [.badReference])
        var other = ConventionScan()
        _ = other.value(at: ["data", "media", "url"], in: try PushPayload(parsing: Array(#"{"data":[1]}"#.utf8)))
        #expect(other.problems.isEmpty)
    }

    @Test("the README's library example, against the loopback origin")
    func readmeExample() async throws {
        let bed = try TestBed()
        let bytes = Array(
            #"{"aps":{"mutable-content":1},"fcm_options":{"image":"\#(bed.url("/media/photo.jpg"))"}}"#.utf8)
        // The README's lines, with the loopback origin's configuration in place of the defaults.
        let enricher = try Enricher(configuration: bed.configuration)
        let result = await enricher.enrich(json: bytes, source: "push-1", deadline: .now + .seconds(10))
        #expect(result.outcome == .complete)
        #expect(result.input == "push-1")
        #expect(result.attachments.map(\.media.path).allSatisfy { FileManager.default.fileExists(atPath: $0) })
        await enricher.shutdown()
    }

    @Test("docs/library.md's quick start, against the loopback origin")
    func quickStart() async throws {
        let bed = try TestBed()
        let bytes = Array(#"{"aps":{"mutable-content":1},"adb_media":"\#(bed.url("/media/photo.jpg"))"}"#.utf8)
        var configuration = bed.configuration
        configuration.timeout = .seconds(10)
        let enricher = try Enricher(configuration: configuration)
        let payload = try PushPayload(parsing: bytes)
        let result = await enricher.enrich(payload, deadline: .now + .seconds(10))
        let line = result.jsonBytes()
        #expect(String(decoding: line, as: UTF8.self).contains(#""outcome":"complete""#))
        #expect(enricher.removeAttachments(of: result) == 1)
        await enricher.shutdown()
        #expect(bed.filesOnDisk().isEmpty)
    }

    @Test("contentBytes: the mutated payload byte-exact, as the result's line holds it; nil for an invalid input")
    func contentBytes() async throws {
        let bed = try TestBed()
        // Escapes, a duplicate key and a 30-digit number, which a JSONEncoder would not keep.
        let sent =
            #"{"aps":{"mutable-content":1,"alert":"caf\u00e9 \/ ok"},"n":123456789012345678901234567890,"k":1,"k":2,"#
            + #""adb_media":"\#(bed.url("/media/photo.jpg"))"}"#
        let enricher = try Enricher(configuration: bed.configuration)
        let result = await enricher.enrich(json: Array(sent.utf8), source: "push-1", deadline: .now + .seconds(10))
        let invalid = await enricher.enrich(json: Array("[1]".utf8), source: "push-2", deadline: .now + .seconds(10))
        await enricher.shutdown()
        #expect(result.outcome == .complete)
        let bytes = try #require(result.contentBytes)
        let text = String(decoding: bytes, as: UTF8.self)
        // The payload as sent, then the attachments the engine adds.
        #expect(text.hasPrefix(String(sent.dropLast()) + #","richpush":{"attachments":[{"identifier":"#), "\(text)")
        #expect(
            String(decoding: result.jsonBytes(), as: UTF8.self).contains(#""content":"# + text + #","attachments":"#))
        let richpush = try PushPayload(parsing: bytes).root["richpush"]?.objectValue
        guard case .array(let attached)? = richpush?["attachments"] else {
            Issue.record("no richpush.attachments in \(text)")
            return
        }
        #expect(attached.count == 1)
        #expect(invalid.outcome == .invalid)
        #expect(invalid.contentBytes == nil)
        enricher.removeAttachments(of: result)
    }

    @Test(
        """
        one payload limit: enrich(json:) and payload(parsing:) accept a payload at limits.payload.maximumBytes and \
        refuse one a byte over (payload-too-large), below and above the default limit
        """,
        arguments: [100, 1_500_000])
    func onePayloadLimit(limit: Int) async throws {
        let bed = try TestBed()
        var configuration = bed.configuration
        configuration.limits.payload.maximumBytes = limit
        let enricher = try Enricher(configuration: configuration)
        /// A payload of exactly `count` bytes, with no reference (nothing is fetched).
        func payload(bytes count: Int) -> [UInt8] {
            let head = Array(#"{"aps":{"mutable-content":1},"pad":""#.utf8)
            return head + [UInt8](repeating: UInt8(ascii: "x"), count: count - head.count - 2) + Array(#""}"#.utf8)
        }
        for (count, accepted) in [(limit, true), (limit + 1, false)] {
            let bytes = payload(bytes: count)
            #expect(bytes.count == count)
            let whole = await enricher.enrich(json: bytes, source: "p", deadline: .now + .seconds(10))
            #expect(whole.outcome == (accepted ? .unchanged : .invalid), "\(count) bytes: \(whole.problems)")
            #expect(whole.problems.map(\.code) == (accepted ? [] : [.payloadTooLarge]))
            do {
                let parsed = try enricher.payload(parsing: bytes)
                #expect(accepted, "\(count) bytes parsed over a limit of \(limit)")
                #expect(await enricher.enrich(parsed, timeout: .seconds(10)).outcome == .unchanged)
            } catch {
                #expect(!accepted, "\(count) bytes refused under a limit of \(limit): \(error)")
                #expect(error.code == .payloadTooLarge)
            }
        }
        await enricher.shutdown()
    }

    @Test("state: running, then shuttingDown while a payload drains (new ones refused), then stopped")
    func state() async throws {
        let bed = try TestBed()
        let enricher = try Enricher(configuration: bed.configuration)
        #expect(enricher.state == .running)
        // The whole file comes 800 ms after the first byte: in flight when the shutdown begins.
        let slow = Task {
            await enricher.enrich(TestBed.adobePayload(bed.url("/slow/photo.jpg?ms=800")), timeout: .seconds(30))
        }
        try await untilConnected(bed.origin, count: 1)
        let stopping = Task { await enricher.shutdown() }
        try await waitUntil("the shutdown to begin") { enricher.state != .running }
        // The slow payload is still in flight: the drain waits for it, so the shutdown cannot have finished.
        #expect(enricher.state == .shuttingDown)
        let late = await enricher.enrich(TestBed.adobePayload(bed.url("/media/logo.png")), timeout: .seconds(30))
        #expect(late.outcome == .cancelled)
        await stopping.value
        #expect(enricher.state == .stopped)
        #expect(await slow.value.outcome == .complete)

        let other = try Enricher(configuration: bed.configuration)
        try await offPool { other.syncShutdown() }
        #expect(other.state == .stopped)
    }

    @Test("statistics: a read-only snapshot of the cache's lookups and the bytes fetched")
    func statistics() async throws {
        let bed = try TestBed()
        let enricher = try Enricher(configuration: bed.configuration)
        #expect(enricher.statistics == EngineStatistics())
        // The cache links a URL the second time it is asked (see MediaCacheTests): the third is a hit.
        for _ in 0..<3 {
            let result = await enricher.enrich(TestBed.adobePayload(bed.url("/media/photo.jpg")), timeout: .seconds(20))
            #expect(result.outcome == .complete, "\(result.problems)")
            enricher.removeAttachments(of: result)
        }
        var snapshot = enricher.statistics
        #expect(snapshot.cacheMisses == 2)
        #expect(snapshot.cacheHits == 1)
        #expect(snapshot.fetchedBytes == 2 * fixture("photo.jpg").count)
        snapshot.cacheHits = 99
        #expect(enricher.statistics.cacheHits == 1)
        await enricher.shutdown()
    }

    @Test("docs/library.md's private-origin configuration is valid; an unreadable CA bundle names its field")
    func privateOrigin() throws {
        var configuration = Enricher.Configuration()
        configuration.network.addressPolicy = AddressPolicy(
            allowed: [CIDRRange("10.20.0.0/16")!], denied: [CIDRRange("10.20.99.0/24")!])
        configuration.network.allowedPorts.append(9000...9000)
        configuration.network.resolve = ["media.internal:9000:10.20.0.7"]
        try configuration.validate()
        configuration.network.caBundle = "/nonexistent/private-ca.pem"
        #expect(
            throws: ConfigurationError(
                field: "network.caBundle", code: .unreadable, detail: "cannot read '/nonexistent/private-ca.pem'")
        ) {
            try configuration.validate()
        }
    }

    @Test("a result can be built as a test double and writes the CLI's JSON")
    func testDouble() throws {
        let media = FetchedMedia(
            path: "/srv/push/1/2.jpg", directory: "/srv/push/1", type: .jpeg, bytes: 5905, sha256: "ab")
        let attachment = EnrichmentResult.Attachment(
            identifier: "hero", source: "https://cdn.test/a.jpg", field: "acme.image", convention: "acme", media: media,
            thumbnail: Thumbnail(clip: Thumbnail.Clip(x: 0, y: 0.25, width: 1, height: 0.5)), typeHint: "jpg")
        let content = try PushPayload(parsing: Array(#"{"aps":{"mutable-content":1}}"#.utf8))
        let result = EnrichmentResult(
            outcome: .complete, content: content, attachments: [attachment], elapsed: .milliseconds(12),
            input: "push-1")
        let text = String(decoding: result.jsonBytes(), as: UTF8.self)
        #expect(
            text
                == #"{"input":"push-1","outcome":"complete","content":{"aps":{"mutable-content":1}},"#
                + #""attachments":[{"identifier":"hero","path":"/srv/push/1/2.jpg","#
                + #""source":"https://cdn.test/a.jpg","field":"acme.image","convention":"acme","platform":"ios","#
                + #""type":"public.jpeg","#
                + #""mime":"image/jpeg","bytes":5905,"sha256":"ab","type_hint":"jpg","thumbnail":{"clip":{"x":0,"#
                + #""y":0.25,"width":1,"height":0.5}},"attempts":1}],"problems":[],"elapsed_ms":12.0}"#
        )
    }
}
