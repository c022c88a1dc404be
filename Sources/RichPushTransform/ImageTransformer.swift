#if canImport(Glibc)
    import Glibc
#endif
import CVips
import RichPush

/// One step after a download: an image file in, an image iOS attaches out (JPEG when opaque, PNG with alpha),
/// upright, without metadata, and within a longest side when asked. Blocking: it runs on a thread of its own,
/// never on the fetch loop or the cooperative pool.
///
/// Built and tested on its own; the pipeline does not call it yet (see the README's "Media transformation").
public struct ImageTransformer: Sendable {
    /// Bounds and choices of the transformation; defaults documented with their reasons.
    public struct Settings: Sendable {
        /// An image whose header declares more pixels than this (all frames) is refused before any is decoded.
        /// Default 50,000,000: a 50-megapixel photo, beyond any phone screen many times over; a decompression
        /// bomb declares billions.
        public var maximumPixels = 50_000_000
        /// The longest side of the output, or nil to keep the size. Default nil: iOS scales for display, and a
        /// campaign's image is usually sized for it already; set it to save bytes on the device.
        public var maximumDimension: Int? = nil
        /// JPEG quality. Default 85: indistinguishable from the source at notification sizes, about half the bytes
        /// of 95.
        public var jpegQuality = 85

        public init() {}
    }

    /// What an image's header says, read without decoding.
    public struct Header: Sendable, Hashable {
        public var width: Int
        public var height: Int
        /// Frames of an animation, else 1.
        public var pages: Int
        public var hasAlpha: Bool
        /// libvips's loader (`jpegload`, `webpload`, `svgload`, ...).
        public var loader: String

        /// Pixels in all frames.
        public var pixels: Int { width.multipliedReportingOverflow(by: height).partialValue.multipliedReportingOverflow(by: max(pages, 1)).partialValue }
    }

    /// The file written.
    public struct Output: Sendable, Hashable {
        public var type: MediaType
        public var width: Int
        public var height: Int
    }

    public var settings: Settings

    /// The largest SVG document read for its references: 10 MB, the image cap.
    static let maximumSVGBytes = 10_000_000

    public init(settings: Settings = Settings()) { self.settings = settings }

    /// The header of the image at `path`.
    /// - Throws: `transform-failed` when libvips cannot read it.
    public static func header(of path: String) throws(TransformFailure) -> Header {
        var header = cvips_header()
        guard cvips_probe(path, &header) == 0 else {
            throw TransformFailure(.transformFailed, "cannot read the image: \(String(cString: cvips_error()))")
        }
        let loader = withUnsafeBytes(of: header.loader) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return Header(
            width: Int(header.width), height: Int(header.height), pages: Int(header.pages),
            hasAlpha: header.has_alpha != 0, loader: loader)
    }

    /// Converts the image at `input` into `output` (a path without extension: the type's is appended).
    /// - Returns: what was written; its path is `output + "." + type.fileExtension`.
    /// - Throws: `too-many-pixels` before decoding anything when the header declares more than allowed;
    ///   `transform-failed` with libvips's reason otherwise. Nothing is left at the output path on failure.
    public func convert(_ input: String, to output: String) throws(TransformFailure) -> Output {
        let header = try Self.header(of: input)
        guard header.pixels <= settings.maximumPixels, header.width > 0, header.height > 0 else {
            throw TransformFailure(
                .tooManyPixels,
                "the header declares \(header.width) x \(header.height) x \(header.pages) frames; the limit is \(settings.maximumPixels) pixels")
        }
        if header.loader.hasPrefix("svgload") {
            guard let document = try? InputReader.read(input, limit: Self.maximumSVGBytes).get() else {
                throw TransformFailure(.transformFailed, "the SVG document is unreadable or larger than \(Self.maximumSVGBytes) bytes")
            }
            if let reference = SVGReferences.firstExternal(in: document) {
                throw TransformFailure(.transformFailed, "the SVG document references an external resource ('\(reference)'); it is not rendered")
            }
        }
        let type: MediaType = header.hasAlpha ? .png : .jpeg
        let path = output + "." + type.fileExtension
        var width: Int32 = 0
        var height: Int32 = 0
        let side = Int32(clamping: settings.maximumDimension ?? 0)
        guard cvips_convert(input, path, header.hasAlpha ? CVIPS_PNG : CVIPS_JPEG, side, Int32(settings.jpegQuality), &width, &height) == 0
        else {
            let reason = String(cString: cvips_error())
            unlink(path)
            throw TransformFailure(.transformFailed, reason.isEmpty ? "libvips failed" : reason)
        }
        return Output(type: type, width: Int(width), height: Int(height))
    }
}

/// Why an image could not be transformed; `code` is `too-many-pixels` or `transform-failed`.
public struct TransformFailure: Error, Sendable, Hashable {
    public var code: Problem.Code
    public var detail: String

    public init(_ code: Problem.Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }
}
