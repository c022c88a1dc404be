import RichPushCore

/// What an image's header says.
public struct ImageHeader: Sendable, Hashable {
    /// The width of one frame.
    public var width: Int
    /// The height of one frame.
    public var height: Int
    /// Frames of an animation, else 1.
    public var pages: Int
    /// Whether it has an alpha channel.
    public var hasAlpha: Bool
    /// The format its decoder read it as, whichever library the converter uses: the type it was asked to read
    /// (`ImageConverter.header(of:type:)`), or the step refuses the image (`transform-failed`) rather than let a
    /// decoder of another format read it. Nil when no decoder read it (the first bytes' dimensions).
    public var decoder: MediaType?

    /// A header read by the decoder of `decoder`.
    public init(width: Int, height: Int, pages: Int, hasAlpha: Bool, decoder: MediaType?) {
        self.width = width
        self.height = height
        self.pages = pages
        self.hasAlpha = hasAlpha
        self.decoder = decoder
    }

    /// What the first bytes of a still JPEG or PNG say (`ImageDimensions`): its size, one frame, no decoder.
    init(size: ImageSize) {
        self.init(width: size.width, height: size.height, pages: 1, hasAlpha: false, decoder: nil)
    }

    /// The types whose frames are all converted (into an animated GIF): an animated GIF's and WebP's. A converter
    /// reports pages as frames for these alone; a TIFF's other pages and a HEIF's other images are never read.
    package static let animatedTypes: [MediaType] = [.gif, .webp]

    /// Pixels in all frames, saturating.
    public var pixels: Int {
        let (area, overflow) = width.multipliedReportingOverflow(by: height)
        let (all, overflowAgain) = area.multipliedReportingOverflow(by: max(pages, 1))
        return overflow || overflowAgain ? Int.max : all
    }

    /// The longest side.
    public var longestSide: Int { max(width, height) }
}
