import Foundation
import RichPush
import Testing

// Public API only (no @testable): what a package with its own ImageConverter, and no libvips, can write.

/// A converter without an image library: it reads a lossy WebP's size from its VP8 frame header and, unable to
/// decode it, attaches the brand's placeholder PNG in its place (written through `ImageOutput`).
struct PlaceholderConverter: ImageConverter {
    let placeholder: [UInt8]
    /// The decoder the header names: the type asked for, unless a test makes it claim another.
    var claimedDecoder: MediaType? = nil

    func header(of path: String, type: MediaType) throws(TransformFailure) -> ImageHeader {
        let bytes = Array(FileManager.default.contents(atPath: path) ?? Data())
        // RIFF....WEBPVP8 ....(frame tag, 3 bytes)(start code 9D 01 2A)(width, height: 14 bits little-endian)
        guard type == .webp, bytes.count >= 30, bytes[12..<16].elementsEqual("VP8 ".utf8),
            bytes[23..<26].elementsEqual([0x9D, 0x01, 0x2A])
        else {
            throw TransformFailure(.transformFailed, "the placeholder converter reads lossy WebP only")
        }
        let width = (Int(bytes[26]) | Int(bytes[27]) << 8) & 0x3FFF
        let height = (Int(bytes[28]) | Int(bytes[29]) << 8) & 0x3FFF
        return ImageHeader(width: width, height: height, pages: 1, hasAlpha: true, decoder: claimedDecoder ?? type)
    }

    func convert(_ request: ConversionRequest, stop: StopSignal) throws(TransformFailure) -> ImageSize {
        guard request.format == .png else { throw TransformFailure(.transformFailed, "the placeholder is a PNG") }
        try request.output.write(placeholder)
        // The PNG's IHDR: width and height, big-endian, at bytes 16 and 20.
        func word(_ at: Int) -> Int { placeholder[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        return ImageSize(width: word(16), height: word(20))
    }

    func verify(_ request: VerificationRequest, stop: StopSignal) throws(TransformFailure) {}
}

@Suite("A custom ImageConverter (no libvips) through the engine")
struct CustomConverterTests {
    @Test(
        "a converter of its own decodes nothing libvips names: its header's decoder is a MediaType, its output a writer"
    )
    func placeholder() async throws {
        let placeholder = fixture("logo.png")
        let bed = try TestBed { $0.transform.converter = PlaceholderConverter(placeholder: placeholder) }
        let enricher = try Enricher(configuration: bed.configuration)
        let result = await enricher.enrich(TestBed.adobePayload(bed.url("/media/banner.webp")), timeout: .seconds(20))
        await enricher.shutdown()
        #expect(result.outcome == .complete, "\(result.problems)")
        let media = try #require(result.attachments.first?.media)
        #expect(media.type == .png)
        #expect(media.transformation?.steps.contains(.transcoded) == true)
        #expect(media.transformation?.original.type == .webp)
        #expect(Array(FileManager.default.contents(atPath: media.path) ?? Data()) == placeholder)
        #expect(enricher.removeAttachments(of: result) == 1)
        #expect(bed.filesOnDisk().isEmpty)
    }

    @Test("a header read by another format's decoder is refused, transform-failed, with nothing left on disk")
    func otherDecoder() async throws {
        let converter = PlaceholderConverter(placeholder: fixture("logo.png"), claimedDecoder: .bmp)
        let bed = try TestBed { $0.transform.converter = converter }
        let enricher = try Enricher(configuration: bed.configuration)
        let result = await enricher.enrich(TestBed.adobePayload(bed.url("/media/banner.webp")), timeout: .seconds(20))
        await enricher.shutdown()
        #expect(result.outcome == .failed)
        #expect(result.problems.map(\.code) == [.transformFailed])
        #expect(
            result.problems.first?.detail.contains("read the image/webp as image/bmp") == true, "\(result.problems)")
        #expect(bed.filesOnDisk().isEmpty)
    }
}
