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
    /// The decoder that reads it (libvips's loader: `jpegload`, `webpload`, `svgload`...).
    public var loader: String

    public init(width: Int, height: Int, pages: Int, hasAlpha: Bool, loader: String) {
        self.width = width
        self.height = height
        self.pages = pages
        self.hasAlpha = hasAlpha
        self.loader = loader
    }

    /// What the first bytes of a still JPEG or PNG say (`ImageDimensions`): its size, one frame, no decoder named.
    init(size: ImageSize) {
        self.init(width: size.width, height: size.height, pages: 1, hasAlpha: false, loader: "")
    }

    /// Pixels in all frames, saturating.
    public var pixels: Int {
        let (area, overflow) = width.multipliedReportingOverflow(by: height)
        let (all, overflowAgain) = area.multipliedReportingOverflow(by: max(pages, 1))
        return overflow || overflowAgain ? Int.max : all
    }

    /// The longest side.
    public var longestSide: Int { max(width, height) }
}
