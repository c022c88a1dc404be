import RichPushCore

/// What a body is, judged from its first bytes.
package enum SniffVerdict: Equatable, Sendable {
    /// A type iOS attaches.
    case supported(MediaType)
    /// An image iOS does not attach but the transformation step can convert (WebP, HEIC, AVIF, SVG, TIFF, BMP);
    /// the text is as `unsupported`'s, for when no transformation is configured.
    case convertible(MediaType, String)
    /// Anything else; the text is libmagic's MIME type and description (`text/html (HTML document ...)`).
    case unsupported(String)
}
