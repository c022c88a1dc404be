import FixtureOrigin
import Foundation
import Testing

@testable import RichPush
@testable import RichPushMedia
@testable import RichPushTransform

/// Every file of `Fixtures/media/corpus` (odd and broken images, made by `make-corpus.py`) through the engine
/// against a loopback origin, by default and with the verifying decode, each with the outcome it must have:
/// attached as a type (and the problems that go with it), or refused with a code; never an empty detail, never a
/// path in one, nothing left on disk.
@Suite("Media corpus: odd and broken images, each with its outcome", .offPool)
struct MediaCorpusTests {
    static let corpus = FixtureRoutes.fixturesDirectory + "/media/corpus"

    enum Expected: Sendable {
        /// Attached as this type, with these problems.
        case attached(MediaType, [EnrichmentProblem.Code] = [])
        /// Refused with this code.
        case refused(EnrichmentProblem.Code)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var file: String
        /// The outcome with the verifying decode (`transform.verifyImages`).
        var expected: Expected
        /// The outcome by default, when it differs: what only a decode finds is not found.
        var byDefault: Expected? = nil

        var testDescription: String { file }

        /// The expected outcome, with the verifying decode or by default.
        func expected(verifying: Bool) -> Expected { verifying ? expected : byDefault ?? expected }
    }

    static let cases: [Case] = [
        // JPEG: sound ones pass through; one cut short or with corrupt data is attached (a phone shows what
        // decodes) with damaged-image, by default when its structure shows it (no end-of-image marker, a byte
        // that is no marker), with the decode when only the data is corrupt; one without scan data, a header with
        // no picture or too many pixels is refused.
        Case(file: "jpeg-baseline.jpg", expected: .attached(.jpeg)),
        Case(file: "jpeg-progressive.jpg", expected: .attached(.jpeg)),
        Case(file: "jpeg-cmyk.jpg", expected: .attached(.jpeg)),
        Case(file: "jpeg-orientation-8.jpg", expected: .attached(.jpeg)),
        Case(file: "jpeg-truncated.jpg", expected: .attached(.jpeg, [.damagedImage])),
        Case(file: "jpeg-bitflip.jpg", expected: .attached(.jpeg, [.damagedImage])),
        Case(file: "jpeg-corrupt-data.jpg", expected: .attached(.jpeg, [.damagedImage]), byDefault: .attached(.jpeg)),
        Case(file: "jpeg-headers-only.jpg", expected: .refused(.damagedImage)),
        Case(file: "jpeg-zero-width.jpg", expected: .refused(.damagedImage)),
        Case(file: "jpeg-huge.jpg", expected: .refused(.tooManyPixels)),
        Case(file: "jpeg-empty.jpg", expected: .refused(.emptyBody)),
        // PNG: a phone shows nothing of one that does not decode whole: refused; by default when its structure
        // shows it (cut short, a critical chunk's CRC), with the decode when only its zlib stream is broken.
        Case(file: "png-rgb.png", expected: .attached(.png)),
        Case(file: "png-grey-alpha.png", expected: .attached(.png)),
        Case(file: "png-palette-trns.png", expected: .attached(.png)),
        Case(file: "png-16-bit.png", expected: .attached(.png)),
        Case(file: "png-interlaced.png", expected: .attached(.png)),
        Case(file: "png-trailing-html.png", expected: .attached(.png)),
        Case(file: "png-ztxt-bomb.png", expected: .attached(.png)),
        Case(file: "apng-three-frames.png", expected: .attached(.png)),
        Case(file: "png-truncated.png", expected: .refused(.damagedImage)),
        Case(file: "png-bad-crc.png", expected: .refused(.damagedImage)),
        Case(
            file: "png-bad-zlib.png", expected: .refused(.damagedImage), byDefault: .attached(.png)),
        Case(file: "png-zero.png", expected: .refused(.damagedImage)),
        Case(file: "png-huge.png", expected: .refused(.tooManyPixels)),
        // GIF: one cut short, or without its trailer, is attached (a phone shows the frames that decode); one whose
        // logical screen is over the pixel limit is refused (a phone makes a canvas of its size).
        Case(file: "gif-still.gif", expected: .attached(.gif)),
        Case(file: "gif-many-frames.gif", expected: .attached(.gif)),
        Case(file: "gif-tiny-frames.gif", expected: .attached(.gif)),
        Case(file: "gif-huge-screen.gif", expected: .refused(.tooManyPixels)),
        Case(file: "gif-polyglot.gif", expected: .attached(.gif)),
        Case(file: "gif-truncated.gif", expected: .attached(.gif, [.damagedImage])),
        Case(file: "gif-no-trailer.gif", expected: .attached(.gif, [.damagedImage])),
        // WebP: transcoded (alpha to PNG, an animation to GIF); one cut short cannot be.
        Case(file: "webp-lossy.webp", expected: .attached(.jpeg)),
        Case(file: "webp-alpha.webp", expected: .attached(.png)),
        Case(file: "webp-animated.webp", expected: .attached(.gif)),
        Case(file: "webp-truncated.webp", expected: .refused(.transformFailed)),
        // BMP, through ImageMagick's decoder: to JPEG (BI_RGB's fourth byte is not alpha).
        Case(file: "bmp-1-bit.bmp", expected: .attached(.jpeg)),
        Case(file: "bmp-4-bit.bmp", expected: .attached(.jpeg)),
        Case(file: "bmp-8-bit.bmp", expected: .attached(.jpeg)),
        Case(file: "bmp-24-bit.bmp", expected: .attached(.jpeg)),
        Case(file: "bmp-32-bit.bmp", expected: .attached(.jpeg)),
        // Types iOS does not attach and RichPush does not convert.
        Case(file: "icon.ico", expected: .refused(.unsupportedType)),
        Case(file: "image.tga", expected: .refused(.unsupportedType)),
        Case(file: "image.psd", expected: .refused(.unsupportedType)),
    ]

    @Test("every corpus file is listed here")
    func listed() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.corpus).sorted()
        #expect(files == Self.cases.map(\.file).sorted())
    }

    // One case at a time: 86 engines with their libvips threads all at once were a burst of CPU that delayed the
    // timed suites running beside this one (HostileTests' good payload, RetryTests' deadlines) past their bounds.
    @Test(
        """
        each file has its outcome, by default and with the verifying decode: attached as its type or refused with its \
        code, details clean, nothing left
        """,
        .serialized, arguments: cases, [false, true])
    func outcome(_ item: Case, verifying: Bool) async throws {
        let bed = try TestBed(media: Self.corpus) { configuration in
            configuration.transform.converter = VipsConverter()
            configuration.transform.verifyImages = verifying
        }
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(TestBed.adobePayload(bed.url("/media/\(item.file)")))
            try await Self.check(result, item, verifying: verifying, bed: bed, enricher: enricher)
        }
    }

    /// Asserts `result` is what `item` expects, then removes what was attached and checks nothing is left.
    static func check(
        _ result: EnrichmentResult, _ item: Case, verifying: Bool, bed: TestBed, enricher: Enricher
    ) async throws {
        for problem in result.problems {
            #expect(!problem.detail.isEmpty, "\(problem)")
            // No path, and a reason named (not the converter's fallback for an empty libvips message).
            let clean =
                !problem.detail.contains(bed.attachments) && !problem.detail.contains("/tmp/")
                && !problem.detail.contains("libvips failed") && !problem.detail.contains("gave no reason")
            #expect(clean, "\(problem)")
        }
        switch item.expected(verifying: verifying) {
        case .attached(let type, let codes):
            let media = try #require(result.attachments.first?.media, "\(result.problems)")
            #expect(media.type == type)
            #expect(result.problems.map(\.code) == codes, "\(result.problems)")
            // What is attached is whole, readable as its type, and what the record says.
            #expect(try await sha256sum(media.path) == media.sha256)
            let loaders: [MediaType: String] = [.jpeg: "jpegload", .png: "pngload", .gif: "gifload"]
            #expect(try VipsConverter().probe(media.path, type: type).loader.hasPrefix(loaders[type] ?? "?"))
            #expect(enricher.removeAttachments(of: result) == 1)
        case .refused(let code):
            #expect(result.attachments.isEmpty)
            #expect(result.problems.map(\.code) == [code], "\(result.problems)")
        }
        #expect(bed.entriesOnDisk().isEmpty)
    }

    @Test(
        """
        with stripMetadata, every sound PNG is filtered, not re-encoded: no text chunk, nothing after IEND, frames \
        kept
        """
    )
    func strippedPNGs() async throws {
        let bed = try TestBed(media: Self.corpus) { configuration in
            configuration.transform.converter = VipsConverter()
            configuration.transform.stripMetadata = true
        }
        let sound = Self.cases.filter {
            guard case .attached(.png, []) = $0.expected else { return false }
            return $0.file.hasSuffix(".png")
        }
        #expect(sound.count == 8)
        try await withEnricher(bed.configuration) { enricher in
            for item in sound {
                let result = await enricher.enrich(TestBed.adobePayload(bed.url("/media/\(item.file)")))
                let media = try #require(result.attachments.first?.media, "\(item.file): \(result.problems)")
                #expect(result.problems.isEmpty, "\(item.file): \(result.problems)")
                #expect(media.transformation?.steps == [.metadataStripped], "\(item.file)")
                let source = try PNGChunks(fixture("corpus/" + item.file))
                let written = try PNGChunks(Array(FileManager.default.contents(atPath: media.path) ?? Data()))
                #expect(written.bytes.count == written.chunks.last!.whole.upperBound, "\(item.file): bytes after IEND")
                #expect(
                    written.chunks.allSatisfy { PNGChunks.kept.contains($0.type) || $0.type == "eXIf" }, "\(item.file)")
                #expect(written.isAnimated == source.isAnimated, "\(item.file)")
                // The picture is the source's: the same IDAT bytes.
                let idat = { (png: PNGChunks) in
                    png.chunks.filter { $0.type == "IDAT" }.map { Array(png.bytes[$0.data]) }
                }
                #expect(idat(written) == idat(source), "\(item.file)")
                #expect(try VipsConverter().probe(media.path, type: .png).loader.hasPrefix("pngload"), "\(item.file)")
                _ = enricher.removeAttachments(of: result)
            }
        }
        #expect(bed.entriesOnDisk().isEmpty)
    }

    /// libvips's converter, counting its verifying decodes.
    struct CountingConverter: ImageConverter {
        let inner = VipsConverter()
        let verifications = LockedValue(0)

        func header(of path: String, type: MediaType) throws(TransformFailure) -> ImageHeader {
            try inner.header(of: path, type: type)
        }
        func convert(_ request: ConversionRequest, stop: StopSignal) throws(TransformFailure) -> ImageSize {
            try inner.convert(request, stop: stop)
        }
        func verify(_ request: VerificationRequest, stop: StopSignal) throws(TransformFailure) {
            verifications.withLock { $0 += 1 }
            try inner.verify(request, stop: stop)
        }
    }

    @Test(
        """
        a campaign decodes each image once: a damaged JPEG's verdict rides with the cache, a refused PNG's is kept by \
        hash
        """
    )
    func verdictOnce() async throws {
        let converter = CountingConverter()
        let bed = try TestBed(media: Self.corpus) { configuration in
            configuration.transform.converter = converter
            configuration.transform.verifyImages = true
        }
        try await withEnricher(bed.configuration) { enricher in
            // Whole to its structure, its scan data corrupt: only the decode finds it.
            for _ in 0..<5 {
                let result = await enricher.enrich(TestBed.adobePayload(bed.url("/media/jpeg-corrupt-data.jpg")))
                #expect(result.attachments.count == 1)
                #expect(result.problems.map(\.code) == [.damagedImage])
                _ = enricher.removeAttachments(of: result)
            }
            #expect(converter.verifications.withLock { $0 } == 1)
            // A refusal is not cached: each payload fetches the PNG again, and none decodes it again.
            for _ in 0..<5 {
                let result = await enricher.enrich(TestBed.adobePayload(bed.url("/media/png-bad-zlib.png")))
                #expect(result.problems.map(\.code) == [.damagedImage])
            }
            #expect(bed.origin.exchanges.filter { $0.target.hasSuffix("png-bad-zlib.png") }.count == 5)
            #expect(converter.verifications.withLock { $0 } == 2)
            // A JPEG whose structure shows the damage is not decoded: the structure check said it.
            let truncated = await enricher.enrich(TestBed.adobePayload(bed.url("/media/jpeg-truncated.jpg")))
            #expect(truncated.problems.map(\.code) == [.damagedImage])
            #expect(
                truncated.problems.first?.detail.contains("no end-of-image marker") == true, "\(truncated.problems)")
            #expect(converter.verifications.withLock { $0 } == 2)
        }
    }

    @Test(
        """
        with verifyImages off (the default), a JPEG whose scan data alone is corrupt is attached as before, without a \
        decode or a problem
        """
    )
    func verificationOff() async throws {
        let converter = CountingConverter()
        let bed = try TestBed(media: Self.corpus) { configuration in
            configuration.transform.converter = converter
        }
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(TestBed.adobePayload(bed.url("/media/jpeg-corrupt-data.jpg")))
            #expect(result.outcome == .complete)
            #expect(result.problems.isEmpty)
            #expect(converter.verifications.withLock { $0 } == 0)
        }
    }

    @Test(
        """
        by default, a JPEG cut short is attached with damaged-image, no decode; from the media cache it carries its \
        problem too
        """
    )
    func structureByDefault() async throws {
        let converter = CountingConverter()
        let bed = try TestBed(media: Self.corpus) { configuration in
            configuration.transform.converter = converter
        }
        try await withEnricher(bed.configuration) { enricher in
            var results: [EnrichmentResult] = []
            for _ in 0..<3 {
                let result = await enricher.enrich(TestBed.adobePayload(bed.url("/media/jpeg-truncated.jpg")))
                #expect(result.outcome == .complete)
                #expect(result.attachments.count == 1)
                #expect(result.problems.map(\.code) == [.damagedImage])
                #expect(
                    result.problems.first?.detail
                        == "the JPEG is cut short: no end-of-image marker in its 15258 bytes; attached: a phone "
                        + "shows the part that decodes",
                    "\(result.problems)")
                results.append(result)
            }
            // Fetched once: the second and third came from the media cache, with the verdict.
            #expect(bed.origin.exchanges.filter { $0.target.hasSuffix("jpeg-truncated.jpg") }.count == 1)
            #expect(converter.verifications.withLock { $0 } == 0)
            for result in results { #expect(enricher.removeAttachments(of: result) == 1) }
        }
        #expect(bed.entriesOnDisk().isEmpty)
    }

    @Test(
        """
        without the transformation (no libvips), the structure is still checked: a PNG cut short refused, a GIF cut \
        short attached with its problem
        """,
        .serialized,
        arguments: [
            ("png-truncated.png", Expected.refused(.damagedImage)), ("png-bad-crc.png", .refused(.damagedImage)),
            ("jpeg-headers-only.jpg", .refused(.damagedImage)), ("gif-truncated.gif", .attached(.gif, [.damagedImage])),
            ("jpeg-truncated.jpg", .attached(.jpeg, [.damagedImage])), ("png-bad-zlib.png", .attached(.png)),
            ("png-trailing-html.png", .attached(.png)),
        ])
    func structureWithoutTransform(_ file: String, _ expected: Expected) async throws {
        let bed = try TestBed(media: Self.corpus)
        #expect(bed.configuration.transform.converter == nil)
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(TestBed.adobePayload(bed.url("/media/\(file)")))
            switch expected {
            case .attached(let type, let codes):
                #expect(result.attachments.first?.media.type == type)
                #expect(result.problems.map(\.code) == codes, "\(result.problems)")
                _ = enricher.removeAttachments(of: result)
            case .refused(let code):
                #expect(result.outcome == .failed)
                #expect(result.problems.map(\.code) == [code], "\(result.problems)")
                #expect(
                    result.problems.first?.detail.hasSuffix("a phone shows nothing of it") == true, "\(result.problems)"
                )
            }
        }
        #expect(bed.entriesOnDisk().isEmpty)
    }
}
