import FixtureOrigin
import Foundation
import RichPushTransform
import Testing

@testable import RichPush

/// What a fetch records of where it went and what its origin declared, against the loopback origin: the
/// redirects followed and the final response's Content-Type, kept through the media cache and the transformation.
@Suite("Provenance: the redirects followed and the Content-Type sent", .offPool)
struct ProvenanceTests {
    /// A JPEG behind two redirects, sent as `text/plain`.
    static let mislabelled = "/redirect/2?to=/media/photo.jpg?type=text/plain"

    /// The provenance of `mislabelled` fetched from `bed`.
    static func mislabelledProvenance(_ bed: TestBed) -> FetchedMedia.Provenance {
        FetchedMedia.Provenance(
            redirects: [
                bed.url("/redirect/1?to=/media/photo.jpg?type=text/plain"), bed.url("/media/photo.jpg?type=text/plain"),
            ],
            contentType: "text/plain")
    }

    /// `path` fetched from `bed`'s origin by a fetcher of its configuration.
    static func fetched(_ path: String, _ bed: TestBed) async throws -> FetchedMedia {
        try await withFetcher(bed.configuration) { try await $0.fetch(bed.url(path), timeout: .seconds(20)).get() }
    }

    @Test("two redirects are recorded in the order followed, and the Content-Type the origin sent beside the type")
    func redirectsAndContentType() async throws {
        let bed = try TestBed()
        let media = try await Self.fetched(Self.mislabelled, bed)
        #expect(media.type == .jpeg, "the bytes decide the type")
        #expect(media.provenance == Self.mislabelledProvenance(bed))
    }

    @Test("without a redirect or a Content-Type, the provenance says none of either")
    func none() async throws {
        let bed = try TestBed()
        let media = try await Self.fetched("/untyped/logo.png", bed)
        #expect(media.type == .png)
        #expect(media.provenance == FetchedMedia.Provenance(redirects: [], contentType: nil))
    }

    @Test("an over-long Content-Type is kept to its first 256 bytes")
    func longContentType() async throws {
        let bed = try TestBed()
        let sent = "image/jpeg; x=" + String(repeating: "a", count: 1_500)
        let encoded = sent.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let media = try await Self.fetched("/media/photo.jpg?type=" + encoded, bed)
        #expect(media.provenance?.contentType == String(sent.prefix(FetchedMedia.Provenance.maximumContentTypeBytes)))
    }

    @Test(
        "a cache hit, and a copy revalidated by a 304, carry the provenance of the fetch that stored it",
        arguments: [Duration.seconds(600), .nanoseconds(1)])
    func throughCache(timeToLive: Duration) async throws {
        let bed = try TestBed { $0.cache.timeToLive = timeToLive }
        try await withEnricher(bed.configuration) { enricher in
            let payload = TestBed.adobePayload(bed.url(Self.mislabelled))
            let first = await enricher.enrich(payload, timeout: .seconds(10))
            let second = await enricher.enrich(payload, timeout: .seconds(10))
            let media = [first, second].compactMap { $0.attachments.first?.media }
            try #require(media.count == 2, "\(first.problems) \(second.problems)")
            #expect(media[0].path != media[1].path, "each payload has its own file")
            #expect(media.map(\.provenance) == Array(repeating: Self.mislabelledProvenance(bed), count: 2))
            // Within the time to live the origin saw one request for the file; once stale, a conditional one more.
            let requests = bed.origin.exchanges.filter { $0.target.hasPrefix("/media/photo.jpg") }
            #expect(requests.map(\.status) == (timeToLive == .nanoseconds(1) ? [200, 304] : [200]))
        }
    }

    @Test("a transformed image keeps its source's provenance")
    func throughTransformation() async throws {
        let bed = try TestBed { $0.transform.converter = VipsConverter() }
        let media = try await Self.fetched("/redirect/1?to=/media/banner.webp?type=application/octet-stream", bed)
        #expect(media.transformation?.original.type == .webp, "the WebP was transcoded")
        #expect(
            media.provenance
                == FetchedMedia.Provenance(
                    redirects: [bed.url("/media/banner.webp?type=application/octet-stream")],
                    contentType: "application/octet-stream"))
    }
}
