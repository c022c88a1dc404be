import FixtureOrigin
import Foundation
import Testing

@testable import RichPush
@testable import RichPushMedia

/// Every file of `Fixtures/media/av-corpus` (what common encoders write, and broken copies: made by
/// `make-av-corpus.py`) through the engine against a loopback origin, held in memory and streamed to disk, each with
/// the outcome its structure gives it: attached (with `damaged-media` when a player plays only part of it), or
/// refused with `damaged-media`; never an empty detail or a path in one, nothing left on disk.
@Suite("Audio and video corpus: sound and broken files, each with its outcome", .offPool)
struct AudioVideoCorpusTests {
    static let corpus = FixtureRoutes.fixturesDirectory + "/media/av-corpus"

    enum Expected: Sendable {
        /// Attached as this type, with no problem.
        case attached(MediaType)
        /// Attached as this type, with a `damaged-media` problem whose detail holds these words.
        case damaged(MediaType, String)
        /// Refused with `damaged-media`, its detail holding these words.
        case refused(String)
    }

    static let cases: [(file: String, expected: Expected)] = [
        // What encoders write: whole, whatever their tags, layers, or the sizes a writer that could not seek back
        // left at 0xFFFFFFFF.
        ("mp3-lame-vbr.mp3", .attached(.mp3)), ("mp3-lame-id3v1-id3v2.mp3", .attached(.mp3)),
        ("mp3-layer2.mp3", .attached(.mp3)), ("mp3-ape-tag.mp3", .attached(.mp3)),
        ("wav-streamed.wav", .attached(.wav)), ("wav-odd-size.wav", .attached(.wav)),
        ("aiff-sox.aiff", .attached(.aiff)), ("aiff-sox.aifc", .attached(.aiff)),
        ("m4a-faststart.m4a", .attached(.m4a)), ("mp4-faststart.mp4", .attached(.mp4)),
        ("mp4-fragmented.mp4", .attached(.mp4)), ("avi-streamed.avi", .attached(.avi)),
        ("mpeg1-ffmpeg.mpg", .attached(.mpeg)), ("mpeg2-ffmpeg-dvd.mpg", .attached(.mpeg2)),
        // Cut short, or with bytes a player skips: a player plays what is there.
        ("m4a-truncated.m4a", .damaged(.m4a, "cut short: its mdat box")),
        ("wav-truncated.wav", .damaged(.wav, "cut short: its 'data' chunk")),
        ("aiff-truncated.aiff", .damaged(.aiff, "cut short: its 'SSND' chunk")),
        ("avi-truncated.avi", .damaged(.avi, "cut short: its 'movi' list")),
        ("mp3-truncated.mp3", .damaged(.mp3, "cut short: its last frame")),
        ("mp3-junk-between.mp3", .damaged(.mp3, "300 bytes between its frames")),
        ("mp4-trailing-html.mp4", .damaged(.mp4, "CTYP box")),
        ("mpeg2-truncated.mpg", .damaged(.mpeg2, "cut short at byte 8197, in the header of its pack header")),
        // What the probe sent, a valid header and then HTML, and files without a part a player needs.
        ("mp3-frame-html.mp3", .refused("no two MPEG audio frames follow each other")),
        ("mp3-id3-html.mp3", .refused("no two MPEG audio frames follow each other")),
        ("wav-header-html.wav", .refused("before a whole fmt chunk")),
        ("mp4-ftyp-html.mp4", .refused("before a whole moov box")),
        ("mp4-no-moov.mp4", .refused("no moov box")),
        ("wav-no-fmt.wav", .refused("comes before its fmt chunk")),
        ("aiff-no-comm.aiff", .refused("no COMM chunk")),
        ("mpeg2-pack-html.mpg", .refused("there is no start code at byte 14")),
    ]

    @Test("every corpus file is listed here")
    func listed() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.corpus).sorted()
        #expect(files == Self.cases.map(\.file).sorted())
    }

    @Test(
        """
        each file has its outcome, held in memory or streamed to disk: attached as its type (with damaged-media when \
        only part plays) or refused with damaged-media; details clean, nothing left
        """,
        arguments: [false, true])
    func outcome(streamed: Bool) async throws {
        let bed = try TestBed(media: Self.corpus) { configuration in
            if streamed { configuration.limits.heldBodyBytes = 0 }
        }
        try await withEnricher(bed.configuration) { enricher in
            for (file, expected) in Self.cases {
                let result = await enricher.enrich(TestBed.adobePayload(bed.url("/media/\(file)")))
                try await Self.check(result, file, expected, bed: bed, enricher: enricher)
            }
        }
        #expect(bed.entriesOnDisk().isEmpty)
    }

    /// Asserts `result` is what `expected` says of `file`, then removes what was attached.
    static func check(
        _ result: EnrichmentResult, _ file: String, _ expected: Expected, bed: TestBed, enricher: Enricher
    ) async throws {
        for problem in result.problems {
            #expect(!problem.detail.contains(bed.attachments) && !problem.detail.contains("/tmp/"), "\(problem)")
        }
        switch expected {
        case .attached(let type), .damaged(let type, _):
            let media = try #require(result.attachments.first?.media, "\(file): \(result.problems)")
            #expect(media.type == type, "\(file)")
            #expect(try await sha256sum(media.path) == media.sha256, "\(file)")
            #expect(enricher.removeAttachments(of: result) == 1, "\(file)")
            guard case .damaged(_, let words) = expected else {
                #expect(result.problems.isEmpty, "\(file): \(result.problems)")
                #expect(result.outcome == .complete, "\(file)")
                return
            }
            #expect(result.outcome == .complete, "\(file)")
            #expect(result.problems.map(\.code) == [.damagedMedia], "\(file): \(result.problems)")
            let detail = result.problems.first?.detail ?? ""
            #expect(
                detail.contains(words) && detail.hasSuffix("; attached: a phone plays what is there"),
                "\(file): \(detail)")
        case .refused(let words):
            #expect(result.attachments.isEmpty, "\(file)")
            #expect(result.outcome == .failed, "\(file)")
            #expect(result.problems.map(\.code) == [.damagedMedia], "\(file): \(result.problems)")
            let detail = result.problems.first?.detail ?? ""
            #expect(detail.contains(words) && detail.hasSuffix("; a phone plays nothing of it"), "\(file): \(detail)")
        }
    }

    @Test(
        """
        the real fixtures of every walked type attach whole, each with no problem; an image keeps damaged-image, \
        audio cut short gets damaged-media
        """
    )
    func fixturesAndCodes() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let fixtures = [
                "chime.mp3", "chime-bare.mp3", "chime.wav", "chime.m4a", "chime.aiff", "clip.mp4", "clip.avi",
                "clip-mpeg1.mpg", "clip-mpeg2.mpg",
            ]
            for file in fixtures {
                let result = await enricher.enrich(TestBed.adobePayload(bed.url("/media/\(file)")))
                #expect(result.outcome == .complete && result.problems.isEmpty, "\(file): \(result.problems)")
                _ = enricher.removeAttachments(of: result)
            }
            // The first 4 KB of each, then zeros (the origin's generated body): an image and audio cut short alike,
            // each reported with its own code.
            let image = await enricher.enrich(TestBed.adobePayload(bed.url("/generated?prefix=photo.jpg&bytes=8000")))
            #expect(image.problems.map(\.code) == [.damagedImage], "\(image.problems)")
            _ = enricher.removeAttachments(of: image)
            let audio = await enricher.enrich(TestBed.adobePayload(bed.url("/generated?prefix=chime.wav&bytes=6000")))
            #expect(audio.problems.map(\.code) == [.damagedMedia], "\(audio.problems)")
            _ = enricher.removeAttachments(of: audio)
        }
        #expect(bed.entriesOnDisk().isEmpty)
    }
}
