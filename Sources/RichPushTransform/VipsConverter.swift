#if canImport(Glibc)
    import Glibc
#endif
import CVips
import RichPush

/// The transformation step's converter on libvips: headers read without decoding, images shrunk on load,
/// sequential access, one libvips thread per conversion (the step's pool bounds how many run), metadata never
/// written, SVG rasterized from memory and refused when it references anything outside itself.
///
/// Set it as `Configuration.transform.converter` to transform; libvips is started at the first use.
public struct VipsConverter: ImageConverter {
    /// The largest SVG document read for its references: 10 MB, the image cap.
    static let maximumSVGBytes = 10_000_000

    public init() {}

    /// Opens and starts libvips, once per process (50 to 500 ms; see `ImageConverter.prepare()`); otherwise the
    /// first image to convert or check does it.
    public func prepare() { _ = cvips_start() }

    public func header(of path: String) throws(TransformFailure) -> ImageHeader {
        var header = cvips_header()
        guard cvips_probe(path, &header) == 0 else {
            throw TransformFailure(.transformFailed, "cannot read the image: \(String(cString: cvips_error()))")
        }
        let loader = withUnsafeBytes(of: header.loader) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return ImageHeader(
            width: Int(header.width), height: Int(header.height), pages: Int(header.pages),
            hasAlpha: header.has_alpha != 0, loader: loader)
    }

    public func convert(_ request: ConversionRequest, stop: StopSignal) throws(TransformFailure) -> ImageSize {
        if try header(of: request.input).loader.hasPrefix("svgload") {
            guard let document = try? InputReader.read(request.input, limit: Self.maximumSVGBytes).get() else {
                throw TransformFailure(.transformFailed, "the SVG document is unreadable or larger than \(Self.maximumSVGBytes) bytes")
            }
            if let reference = SVGReferences.firstExternal(in: document) {
                throw TransformFailure(.transformFailed, "the SVG document references an external resource ('\(reference)'); it is not rendered")
            }
        }
        let format: cvips_format
        switch request.format {
        case .jpeg: format = CVIPS_JPEG
        case .png: format = CVIPS_PNG
        case .gif: format = CVIPS_GIF
        default: throw TransformFailure(.transformFailed, "cannot write \(request.format.mime)")
        }
        nonisolated(unsafe) let handle = cvips_stop_new()!
        defer { cvips_stop_free(handle) }
        var width: Int32 = 0
        var height: Int32 = 0
        let status = try stop.whileRegistered({ cvips_stop_fire(handle) }) { () throws(TransformFailure) in
            cvips_convert(
                request.input, request.output, format, Int32(clamping: request.maximumSide ?? 0), Int32(request.quality),
                request.animated ? 1 : 0, handle, &width, &height)
        }
        guard status == 0 else {
            let reason = String(cString: cvips_error())
            throw TransformFailure(.transformFailed, reason.isEmpty ? "libvips failed" : reason)
        }
        return ImageSize(width: Int(width), height: Int(height))
    }
}
