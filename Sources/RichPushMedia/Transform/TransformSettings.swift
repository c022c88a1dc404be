import RichPushCore

/// What happens to an image between its download and its attachment: transcoding, downscaling, stripping
/// metadata. Nothing happens without a `converter` (the default): images are attached as fetched, or refused,
/// as before. `RichPushTransform.VipsConverter` is the libvips one; the CLI sets it unless `--no-transform`.
public struct TransformSettings: Sendable {

    /// What decodes and encodes images. Default nil: no transformation at all, and no image library loaded.
    public var converter: (any ImageConverter)? = nil
    /// Whether images iOS does not attach (WebP, HEIC, AVIF, SVG, TIFF, BMP) become JPEG (opaque) or PNG (with
    /// alpha), an animated WebP an animated GIF. Default true; false keeps refusing them (`unsupported-type`).
    public var transcode = true
    /// The longest side an attached image may have; a larger one is resized, the aspect kept. Default nil (no
    /// bound): iOS scales for display, and a campaign's image is usually sized for phones already; set it
    /// (e.g. 2048) to save devices bytes.
    public var maximumDimension: Int? = nil
    /// The largest image fetched to be transformed. An image over `limits.imageBytes` (10 MB) but within this is
    /// downscaled until it fits. Default 50,000,000 bytes: a camera's full-size JPEG or a print-quality PNG,
    /// as large as the video cap, so a download is never bounded by less than before. Audio and video keep
    /// their caps.
    public var maximumSourceBytes = 50_000_000
    /// Whether JPEG and PNG images that would pass through untouched lose their metadata too, so that no
    /// attachment keeps EXIF, XMP, IPTC or text (a GPS position above all): a JPEG is re-encoded, a PNG has
    /// its chunks filtered without decoding (`PNGChunks`: an APNG keeps every frame). Default false: a
    /// re-encode costs CPU and a little quality, and most campaign images carry no location. Every image
    /// RichPush re-encodes for another reason loses its metadata anyway (orientation is applied first). A GIF
    /// passes through as it is (its comment and application blocks included).
    public var stripMetadata = false
    /// Whether every JPEG, PNG and GIF is decoded whole once, writing nothing, before it is attached: one
    /// that does not decode (cut short, a broken data stream) is refused when a phone would show nothing of
    /// it (a PNG), else attached with a `damaged-image` problem (a JPEG or GIF: a phone shows what decodes).
    /// The verdict is kept by SHA-256, so a campaign decodes each image once. Default false, from what it
    /// costs (bench (t), release build, 64 in flight): +0.28 ms of CPU for a 100 KB JPEG (0.43 ms without),
    /// +3.3 ms for a 2 MB one (5.0 ms without), and libvips opened at the first image (+24 MiB peak RSS, and
    /// the 50 to 500 ms opening pause in the middle of the work: under load it pushed a payload due at 1.5 s
    /// past its 2 s deadline). A service that attaches senders' images it does not control turns it on
    /// (`--verify-images`), best with `prepare()` called before taking work.
    public var verifyImages = false
    /// An image whose header declares more pixels than this (all frames together) is refused with
    /// `too-many-pixels` before any pixel is decoded. Default 50,000,000: a 50-megapixel photo, beyond any
    /// phone screen many times over; a decompression bomb declares billions.
    public var maximumPixels = 50_000_000
    /// How many images are transformed at once, each on a thread of its own. Default 2: decoding is
    /// CPU-bound and memory-hungry; two keep a second core busy without letting a burst of large images
    /// multiply the peak memory. More wait their turn, within their payload's deadline.
    public var concurrency = 2
    /// JPEG quality of re-encoded images. Default 85: indistinguishable from the source at notification
    /// sizes, about half the bytes of 95.
    public var jpegQuality = 85
    /// The longest side of an Android variant (an FCM message's image for Android; see `AndroidVariant`). Default
    /// 1440: the widest a BigPicture notification is drawn on current phones (a 1440-pixel-wide screen at full
    /// width); FCM's Android code decodes the whole bitmap at full size, so every pixel beyond that costs the phone
    /// memory and shows nothing more.
    public var androidMaximumDimension = 1440

    /// The path of the executable that renders SVG documents, in a process of its own for each conversion (see
    /// `SVGRendererChild`): a `richpush` binary of this version, or a program whose `main` first calls
    /// `SVGRendererChild.runIfAsked(CommandLine.arguments, converter: VipsConverter())`. librsvg never looks at a
    /// stop while it renders a filter, and some documents it renders for minutes or without end (an `feMorphology`
    /// of radius 400 over 2,000 x 2,000 pixels; the pre-scan refuses only the constructs it knows). In a process of
    /// its own such a conversion is killed when its payload's deadline comes, its caller gives up or the engine
    /// shuts down: its thread is free again at once, its output removed, and it is bounded in memory (1 GiB plus
    /// 16 bytes per pixel of `maximumPixels`) and CPU (the deadline's seconds plus one). It costs a process
    /// start per SVG conversion, dynamic linking above all: about 60 ms of CPU and 50 to 120 ms of latency (release
    /// build, medians, docs/transformation.md). A conversion of another type stays in this process (libvips stops
    /// them between tiles).
    ///
    /// Default nil: SVG is rendered in this process, as before, after the same pre-scan; a document that renders
    /// without end then holds one of the `concurrency` threads and a core until librsvg returns (its payload is
    /// answered `expired` 100 ms past its deadline without it), and `concurrency` such documents take every thread.
    /// Set it wherever senders can send SVG. The CLI sets `/proc/self/exe`, its own binary.
    public var svgRenderer: String? = nil

    /// The documented defaults (no converter: nothing is transformed).
    public init() {}

    /// Whether images are transformed at all.
    package var isEnabled: Bool { converter != nil }
}

extension TransformSettings {
    /// The refusal (`too-many-pixels`) of an image whose header declares more pixels than `maximumPixels`, or nil
    /// when it declares no more: one check and one wording for the transformation step and `explain`, which reads
    /// the dimensions from the first bytes.
    package func pixelRefusal(width: Int, height: Int, pages: Int, names: SettingNames) -> FetchFailure? {
        let header = ImageHeader(width: width, height: height, pages: pages, hasAlpha: false, decoder: nil)
        guard header.pixels > maximumPixels else { return nil }
        let frames = pages > 1 ? " x \(pages) frames" : ""
        return FetchFailure(
            .tooManyPixels,
            "the header declares \(width) x \(height) pixels\(frames); the limit is \(maximumPixels) "
                + "(\(names["transform.maximumPixels"]))")
    }
}
