/// Decides a body's type from its first bytes with libmagic, never from the URL or the Content-Type header.
/// Not thread-safe (it owns libmagic handles): one per thread.
final class Sniffer {
    /// What the bytes are.
    enum Verdict: Equatable {
        /// A type iOS attaches.
        case supported(MediaType)
        /// Anything else; the text is libmagic's MIME type and description (`text/html (HTML document ...)`).
        case unsupported(String)
    }

    // One handle for both questions: the database is loaded once (8 MB on Debian 12).
    private let magic: MagicHandle

    init() throws(SnifferError) {
        magic = try MagicHandle()
    }

    /// The verdict on `bytes`, the first bytes of a body.
    func sniff(_ bytes: UnsafeRawBufferPointer) -> Verdict {
        do {
            let mimeType = try magic.identify(bytes, mime: true)
            // The description is needed only to tell MPEG-1 from MPEG-2, and to name a refused type.
            if mimeType != "video/mpeg", let type = MediaType.fromMagic(mime: mimeType, description: "") {
                return .supported(type)
            }
            let description = try magic.identify(bytes, mime: false)
            if let type = MediaType.fromMagic(mime: mimeType, description: description) { return .supported(type) }
            let summary = description.split(separator: ",").first.map(String.init) ?? description
            return .unsupported("\(mimeType) (\(summary))")
        } catch {
            return .unsupported("unidentified (\(error.detail))")
        }
    }

    /// The verdict on `bytes`.
    func sniff(_ bytes: [UInt8]) -> Verdict {
        bytes.withUnsafeBytes { sniff($0) }
    }
}

@available(*, unavailable)
extension Sniffer: Sendable {}
