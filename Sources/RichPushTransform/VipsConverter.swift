import CVips
import RichPushCore
import RichPushMedia

#if canImport(Glibc)
    import Glibc
#endif

/// The transformation step's converter on libvips: each file read only by the decoder of the type libmagic decided
/// (refused when that decoder does not recognise the bytes), headers read without decoding, images shrunk on load,
/// sequential access, one libvips thread per conversion (the step's pool bounds how many run), metadata never
/// written, SVG rasterized from memory and refused when it references anything outside itself, embeds another file
/// (`data:`) or asks for a filter librsvg would render without end (`SVGReferences`).
///
/// Set it as `Enricher.Configuration.transform.converter` to transform; libvips is started at the first use.
public struct VipsConverter: ImageConverter {
    /// The largest SVG document read for its references: 10 MB, the image cap.
    static let maximumSVGBytes = 10_000_000

    /// The decoder of each type: libvips's own, except BMP, which libvips reads only through ImageMagick (its BMP
    /// coder alone). libvips's guess (`vips_foreign_find_load`) is never asked: it sent an SVG whose `<svg>` came
    /// after 1,000 bytes, and an animated AVIF, to ImageMagick, which read the local files the SVG named.
    static let loaders: [MediaType: cvips_loader] = [
        .jpeg: CVIPS_JPEGLOAD, .png: CVIPS_PNGLOAD, .gif: CVIPS_GIFLOAD, .webp: CVIPS_WEBPLOAD, .heic: CVIPS_HEIFLOAD,
        .avif: CVIPS_HEIFLOAD, .svg: CVIPS_SVGLOAD, .tiff: CVIPS_TIFFLOAD, .bmp: CVIPS_BMPLOAD,
    ]

    /// Room for libvips's messages about one failure.
    static let errorCapacity = 1024

    public init() {}

    /// How many libvips calls run now, side by side, in this process.
    static var callsRunning: Int { Int(cvips_calls_running()) }
    /// How many failed libvips calls wait for a moment when no other runs, to run again alone for libvips's message.
    static var callsWaitingAlone: Int { Int(cvips_calls_waiting_alone()) }

    /// Opens and starts libvips, once per process (50 to 500 ms; see `ImageConverter.prepare()`); otherwise the
    /// first image to convert or check does it.
    public func prepare() { _ = cvips_start() }

    /// The header, read by the loader of `type` alone (so its `decoder` is `type`); a BMP's from its bytes
    /// (`ImageDimensions.bmp`, `BMPHeader`), since ImageMagick's BMP coder decodes the whole image to say its size
    /// (a 10,000 x 10,000 RLE BMP of 821 KB held 1 GB before the pixel limit could refuse it).
    public func header(of path: String, type: MediaType) throws(TransformFailure) -> ImageHeader {
        if type == .bmp {
            let source = try Source(path: path, type: type)
            return ImageHeader(
                width: source.size.width, height: source.size.height, pages: 1, hasAlpha: !source.opaque,
                decoder: .bmp)
        }
        return try probe(path, type: type).header
    }

    /// The header, and the name libvips gives the loader that read it (`jpegload`, `svgload_buffer`, ...): what the
    /// tests check each type is read by.
    package func probe(_ path: String, type: MediaType) throws(TransformFailure) -> (
        header: ImageHeader, loader: String
    ) {
        let source = try Source(path: path, type: type)
        var header = cvips_header()
        try source.call("cannot read the image") { input, error in
            cvips_probe(input, &header, error, Self.errorCapacity)
        }
        let loader = withUnsafeBytes(of: header.loader) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        // Pages are frames only where every one is converted (`ImageHeader.animatedTypes`): a TIFF's other pages and a
        // HEIF's other top-level images are never read (page 0, the primary image), so they are no pixels of its
        // (a TIFF of 60 pages of one megapixel each was refused as 60 megapixels).
        let pages = ImageHeader.animatedTypes.contains(type) ? Int(header.pages) : 1
        return (
            ImageHeader(
                width: Int(header.width), height: Int(header.height), pages: pages,
                hasAlpha: header.has_alpha != 0, decoder: type),
            loader
        )
    }

    public func convert(_ request: ConversionRequest, stop: StopSignal) throws(TransformFailure) -> ImageSize {
        let format = try Self.format(request.format, "write")
        let source = try Source(path: request.input, type: request.type)
        var width: Int32 = 0
        var height: Int32 = 0
        try Self.stoppable(stop) { handle throws(TransformFailure) in
            try source.call(nil) { input, error in
                cvips_convert(
                    input, request.output.fileDescriptor, format, Int32(clamping: request.maximumSide ?? 0),
                    Int32(request.quality),
                    request.animated ? 1 : 0, handle, &width, &height, error, Self.errorCapacity)
            }
        }
        return ImageSize(width: Int(width), height: Int(height))
    }

    /// Decodes to no output with libvips's `fail_on` (`cvips_verify`): a JPEG through `jpegload` at an eighth of
    /// its size (every coefficient is still decoded, most of the IDCT skipped), failing on any libjpeg warning
    /// (corrupt data, a premature end); a PNG from `request.bytes` through `pngload_buffer`, failing on a libpng
    /// error; a GIF through `gifload`, every frame, failing on an error (a frame cut short).
    public func verify(_ request: VerificationRequest, stop: StopSignal) throws(TransformFailure) {
        let format = try Self.format(request.type, "verify")
        let bytes = request.bytes ?? []
        var error = [CChar](repeating: 0, count: Self.errorCapacity)
        try Self.stoppable(stop) { handle throws(TransformFailure) in
            let status = bytes.withUnsafeBytes { buffer in
                cvips_verify(
                    format, request.path, buffer.baseAddress, request.bytes == nil ? 0 : buffer.count, handle, &error,
                    Self.errorCapacity)
            }
            guard status == CVIPS_OK.rawValue else {
                let reason = FailureDetail.clean(error)
                throw TransformFailure(
                    .damagedImage,
                    reason.isEmpty
                        ? "libvips could not decode the \(request.type.mime) whole and gave no reason" : reason)
            }
        }
    }

    /// The output (or verified) format `type` is, for cvips.
    private static func format(_ type: MediaType, _ verb: String) throws(TransformFailure) -> cvips_format {
        switch type {
        case .jpeg: return CVIPS_JPEG
        case .png: return CVIPS_PNG
        case .gif: return CVIPS_GIF
        default: throw TransformFailure(.transformFailed, "cannot \(verb) \(type.mime)")
        }
    }

    /// Runs `body` with a cvips stop handle that `stop` fires while it runs.
    private static func stoppable(
        _ stop: StopSignal, _ body: (OpaquePointer) throws(TransformFailure) -> Void
    ) throws(TransformFailure) {
        nonisolated(unsafe) let handle = cvips_stop_new()!
        defer { cvips_stop_free(handle) }
        try stop.whileRegistered({ cvips_stop_fire(handle) }) { () throws(TransformFailure) in try body(handle) }
    }
}

/// A file as its decoder reads it: the loader of its type, SVG's document in memory (checked for external
/// references first), and whether an alpha band its decoder makes is real.
private struct Source {
    let path: String
    let type: MediaType
    let loader: cvips_loader
    let document: [UInt8]
    let opaque: Bool
    /// A BMP's width and height, from its header (zero for other types).
    let size: ImageSize

    init(path: String, type: MediaType) throws(TransformFailure) {
        guard let loader = VipsConverter.loaders[type] else {
            throw TransformFailure(.transformFailed, "no image decoder reads \(type.mime)")
        }
        self.path = path
        self.type = type
        self.loader = loader
        if type == .svg {
            guard let document = try? InputReader.read(path, limit: VipsConverter.maximumSVGBytes).get() else {
                throw TransformFailure(
                    .transformFailed,
                    "the SVG document is unreadable or larger than \(VipsConverter.maximumSVGBytes) bytes")
            }
            let references = SVGReferences(document)
            if let encoding = references.unreadableEncoding {
                throw TransformFailure(
                    .transformFailed,
                    "the SVG document declares the encoding '\(FailureDetail.clean(encoding))', which its checks do "
                        + "not read (UTF-8, US-ASCII or ISO-8859-1); it is not rendered")
            }
            if let reference = references.firstExternal {
                let written = String(FailureDetail.clean(reference).drop { $0.isWhitespace })
                throw TransformFailure(
                    .transformFailed,
                    written.lowercased().hasPrefix("data:")
                        ? "the SVG document embeds another file ('\(written.prefix(60))'), which no check of its "
                            + "type or size reads; it is not rendered"
                        : "the SVG document references an external resource ('\(written)'); it is not rendered"
                )
            }
            if let unbounded = references.unbounded {
                throw TransformFailure(
                    .transformFailed, "the SVG document's \(unbounded) would render without end; it is not rendered")
            }
            self.document = document
        } else {
            document = []
        }
        if type == .bmp {
            // No BMP goes to ImageMagick without its size read first: its coder decodes the whole image for it.
            let head = ImageFile.bytes(path, count: 70)
            guard let size = ImageDimensions.bmp(head) else {
                throw TransformFailure(
                    .transformFailed,
                    "the BMP's header gives no width and height (a 'BM' file header, then a 12-byte header or one of "
                        + "40 bytes or more, each above 0); not decoded")
            }
            self.size = size
            opaque = !BMPHeader.hasAlpha(head)
        } else {
            size = ImageSize(width: 0, height: 0)
            opaque = false
        }
    }

    /// Runs `body` (a cvips call) with the input and an error buffer; throws its failure, with `action` before the
    /// reason when given.
    func call(
        _ action: String?, _ body: (UnsafePointer<cvips_input>, UnsafeMutablePointer<CChar>) -> Int32
    ) throws(TransformFailure) {
        var error = [CChar](repeating: 0, count: VipsConverter.errorCapacity)
        let status = path.withCString { path in
            document.withUnsafeBytes { document in
                var input = cvips_input(
                    loader: loader, path: path, document: document.baseAddress, length: document.count,
                    opaque: opaque ? 1 : 0)
                return body(&input, &error)
            }
        }
        switch status {
        case CVIPS_OK.rawValue:
            return
        case CVIPS_NOT_CLAIMED.rawValue:
            throw TransformFailure(.transformFailed, "the bytes are \(type.mime), but \(notClaimed); not decoded")
        default:
            let message = FailureDetail.clean(error)
            var reason = message.isEmpty ? "libvips's \(loaderName) failed and gave no reason" : message
            if type == .tiff, let layout = TIFFLayout.unreadable(path) {
                reason = "the TIFF uses \(layout), which libvips 8.14 does not read (\(reason))"
            }
            if type == .bmp, message.contains("cache resources exhausted") {
                reason =
                    "the BMP's \(size.width) x \(size.height) pixels need more memory than ImageMagick's policy gives "
                    + "it (policy.xml's memory resource), and it may keep none on disk (\(reason))"
            }
            throw TransformFailure(.transformFailed, action.map { "\($0): \(reason)" } ?? reason)
        }
    }

    /// libvips's name for the loader.
    private var loaderName: String {
        switch loader {
        case CVIPS_JPEGLOAD: return "jpegload"
        case CVIPS_PNGLOAD: return "pngload"
        case CVIPS_GIFLOAD: return "gifload"
        case CVIPS_WEBPLOAD: return "webpload"
        case CVIPS_HEIFLOAD: return "heifload"
        case CVIPS_SVGLOAD: return "svgload"
        case CVIPS_TIFFLOAD: return "tiffload"
        default: return "magickload (its BMP coder)"
        }
    }

    /// Why the decoder did not take the bytes, as far as they say.
    private var notClaimed: String {
        var reason = "libvips's \(loaderName) does not recognise them"
        if loader == CVIPS_HEIFLOAD {
            let head = ImageFile.bytes(path, count: 12)
            if head.count == 12, head[4..<8].elementsEqual("ftyp".utf8) {
                let brand = String(
                    decoding: head[8..<12].map { (0x20..<0x7F).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
                reason += " (major brand '\(brand)'\(brand == "avis" ? ", an AVIF image sequence" : ""))"
            }
        }
        return reason
    }
}
