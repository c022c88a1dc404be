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
        var width: Int32 = 0
        var height: Int32 = 0
        try Self.run(request.format, "write", failing: .transformFailed, stop: stop) { format, handle in
            cvips_convert(
                request.input, request.output, format, Int32(clamping: request.maximumSide ?? 0), Int32(request.quality),
                request.animated ? 1 : 0, handle, &width, &height)
        }
        return ImageSize(width: Int(width), height: Int(height))
    }

    /// Decodes to no output with libvips's `fail_on` (`cvips_verify`): a JPEG through `jpegload` at an eighth of
    /// its size (every coefficient is still decoded, most of the IDCT skipped), failing on any libjpeg warning
    /// (corrupt data, a premature end); a PNG from `request.bytes` through `pngload_buffer`, failing on a libpng
    /// error; a GIF through `gifload`, every frame, failing on an error (a frame cut short).
    public func verify(_ request: VerificationRequest, stop: StopSignal) throws(TransformFailure) {
        let bytes = request.bytes ?? []
        try Self.run(request.type, "verify", failing: .damagedImage, stop: stop) { format, handle in
            bytes.withUnsafeBytes { buffer in
                cvips_verify(format, request.path, buffer.baseAddress, request.bytes == nil ? 0 : buffer.count, handle)
            }
        }
    }

    /// Runs `call` (a cvips call on an image of `type`) with a stop handle `stop` fires; when it fails, throws
    /// `code` with libvips's reason.
    private static func run(
        _ type: MediaType, _ verb: String, failing code: Problem.Code, stop: StopSignal,
        _ call: (cvips_format, OpaquePointer) -> Int32
    ) throws(TransformFailure) {
        let format: cvips_format
        switch type {
        case .jpeg: format = CVIPS_JPEG
        case .png: format = CVIPS_PNG
        case .gif: format = CVIPS_GIF
        default: throw TransformFailure(.transformFailed, "cannot \(verb) \(type.mime)")
        }
        nonisolated(unsafe) let handle = cvips_stop_new()!
        defer { cvips_stop_free(handle) }
        let status = try stop.whileRegistered({ cvips_stop_fire(handle) }) { () throws(TransformFailure) in
            call(format, handle)
        }
        guard status == 0 else {
            let reason = String(cString: cvips_error())
            throw TransformFailure(code, reason.isEmpty ? "libvips failed" : reason)
        }
    }
}
