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

    private let mime: MagicHandle
    private let describe: MagicHandle

    init() throws(SnifferError) {
        mime = try MagicHandle(mime: true)
        describe = try MagicHandle(mime: false)
    }

    /// The verdict on `bytes`, the first bytes of a body.
    func sniff(_ bytes: UnsafeRawBufferPointer) -> Verdict {
        do {
            let mimeType = try mime.identify(bytes)
            // The description is needed only to tell MPEG-1 from MPEG-2, and to name a refused type.
            if mimeType != "video/mpeg", let type = MediaType.fromMagic(mime: mimeType, description: "") {
                return .supported(type)
            }
            let description = try describe.identify(bytes)
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
