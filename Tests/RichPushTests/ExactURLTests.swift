import FixtureOrigin
import Foundation
import RichPush
import RichPushTestSupport
import Testing

/// Media URLs compared byte for byte: Swift compares strings by Unicode canonical equivalence, and a URL with `é` as
/// U+00E9 and one with `e` and U+0301 are different bytes on the wire, and can be different files on a server.
@Suite struct ExactURLTests {
    static let composed = "/caf\u{E9}.img"
    static let decomposed = "/cafe\u{301}.img"

    /// An origin serving photo.jpg at `composed` and logo.png at any other path (`decomposed`), told apart by bytes.
    static func origin() throws -> HTTPOrigin {
        try HTTPOrigin { request in
            // libcurl sends the path's bytes percent-encoded.
            let path = request.path.removingPercentEncoding ?? request.path
            let name = path.utf8.elementsEqual(composed.utf8) ? "photo.jpg" : "logo.png"
            return HTTPOrigin.Response(body: .bytes(fixture(name)))
        }
    }

    static func payload(_ first: String, _ second: String? = nil, extra: String = "") -> PushPayload {
        let cio = second.map { #","CIO":{"push":{"image":"\#($0)"}}"# } ?? ""
        return try! PushPayload(
            parsing: Array(#"{"aps":{"alert":"hi","mutable-content":1},"adb_media":"\#(first)"\#(cio)\#(extra)}"#.utf8))
    }

    @Test(
        """
        two URLs equal but for their Unicode normalization are two references in a payload (two fetches, each its \
        own bytes) and two cache entries across payloads; publishing rewrites only the string equal byte for byte
        """)
    func normalizationKeepsURLsApart() async throws {
        let origin = try Self.origin()
        defer { origin.stop() }
        let (composed, decomposed) = (origin.url(Self.composed), origin.url(Self.decomposed))
        #expect(composed == decomposed, "Swift's String equality, which the keys must not use")
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let both = await enricher.enrich(Self.payload(composed, decomposed))
            #expect(both.attachments.count == 2, "\(both.problems)")
            #expect(both.attachments.map(\.media.type) == [.jpeg, .png], "\(both.attachments.map(\.source))")
            #expect(origin.exchanges.count == 2, "\(origin.requestLog)")
            // Across payloads, through the cache: each URL is fetched (once more: the first payload's files were
            // seen once), never served the other's entry.
            let first = await enricher.enrich(Self.payload(composed))
            let second = await enricher.enrich(Self.payload(decomposed))
            #expect(first.attachments.first?.media.type == .jpeg)
            #expect(second.attachments.first?.media.type == .png, "served the other URL's cached bytes")
        }
        let published = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: published) }
        let publishing = try TestBed {
            $0.publisher = DirectoryPublisher(directory: published, baseURL: "https://cdn.test/m")
        }
        try await withEnricher(publishing.configuration) { enricher in
            // The decomposed URL is published; a field holding the composed one (not a reference) stays as sent.
            let result = await enricher.enrich(Self.payload(decomposed, extra: #","deeplink":"\#(composed)""#))
            let media = try #require(result.attachments.first?.media, "\(result.problems)")
            let root = try #require(result.content?.root)
            #expect(root["adb_media"]?.stringValue == "https://cdn.test/m/\(media.sha256).png")
            #expect(root["deeplink"]?.stringValue.map { $0.utf8.elementsEqual(composed.utf8) } == true)
        }
    }
}
