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

/// A converter that writes part of its output, says so, and then does not stop (as libvips's WebP loader did not, and
/// librsvg rendering a filter): it returns once the test lets it go, 30 s at most.
final class StuckConverter: ImageConverter, @unchecked Sendable {
    private let condition = NSCondition()
    private var writing = false
    private var released = false

    /// Whether it has written its first bytes and waits.
    var isWriting: Bool { condition.withLock { writing } }

    func release() {
        condition.withLock {
            released = true
            condition.broadcast()
        }
    }

    func header(of path: String, type: MediaType) throws(TransformFailure) -> ImageHeader {
        ImageHeader(width: 10, height: 10, pages: 1, hasAlpha: true, decoder: type)
    }

    func convert(_ request: ConversionRequest, stop: StopSignal) throws(TransformFailure) -> ImageSize {
        try request.output.write(Array(repeating: 0x50, count: 1000))
        condition.withLock {
            writing = true
            let end = Date(timeIntervalSinceNow: 30)
            while !released, condition.wait(until: end) {}
        }
        try request.output.write(Array(repeating: 0x50, count: 1000))
        return ImageSize(width: 10, height: 10)
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

    @Test(
        """
        a payload whose Android variant another payload is making waits for it, and at its own deadline says so: the \
        variant cache's wording, not the URL's
        """
    )
    func waiterOnVariant() async throws {
        let converter = StuckConverter()
        defer { converter.release() }
        let bed = try TestBed { $0.transform.converter = converter }
        let enricher = try Enricher(configuration: bed.configuration)
        let text = #"{"message":{"token":"t","android":{"notification":{"image":"\#(bed.url("/media/anim.gif"))"}}}}"#
        let payload = try PushPayload(parsing: Array(text.utf8))
        // The first payload leads the variant, whose conversion holds until released.
        let first = Task { await enricher.enrich(payload, timeout: .seconds(60)) }
        try await waitUntil("the first payload's conversion to start", within: .seconds(30), every: .milliseconds(10)) {
            converter.isWriting
        }
        let second = await enricher.enrich(payload, deadline: .now + .milliseconds(800))
        #expect(second.outcome == .expired, "\(second.problems)")
        #expect(
            second.problems.first?.detail == "the deadline came while the same image's Android variant was being made",
            "\(second.problems)")
        converter.release()
        // Its converter's output is no image (this one writes filler): the first ends once it is let go.
        #expect(await first.value.outcome != .expired)
        await enricher.shutdown()
    }

    @Test(
        """
        a converter that does not stop is answered without at its payload's deadline, and its partial file is gone \
        then, while it still writes: a process that exits before it returns leaves nothing
        """
    )
    func stuckConverterLeavesNothing() async throws {
        let converter = StuckConverter()
        defer { converter.release() }
        let bed = try TestBed { $0.transform.converter = converter }
        let enricher = try Enricher(configuration: bed.configuration)
        let result = await enricher.enrich(
            TestBed.adobePayload(bed.url("/media/banner.webp")), deadline: .now + .milliseconds(500))
        #expect(result.outcome == .expired || result.outcome == .failed, "\(result.outcome) \(result.problems)")
        // The converter still writes: the answer came without it.
        #expect(converter.isWriting)
        #expect(!bed.filesOnDisk().contains { $0.hasSuffix(".partial") }, "\(bed.filesOnDisk())")
        #expect(bed.filesOnDisk().isEmpty, "\(bed.filesOnDisk())")
        converter.release()
        await enricher.shutdown()
        #expect(bed.filesOnDisk().isEmpty, "\(bed.filesOnDisk())")
    }
}
