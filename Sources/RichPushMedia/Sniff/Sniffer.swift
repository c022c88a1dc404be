import RichPushCore
import RichPushFetch

/// Decides a body's type from its first bytes with libmagic, never from the URL or the Content-Type header.
/// Not thread-safe (it owns a libmagic handle): one per thread or serial queue.
///
/// Two steps, so that no body costs more than a few milliseconds: `check` asks libmagic with its text checks
/// off (no type iOS attaches is text; on 4 KB of newlines those checks alone cost ~100 ms) and decides every
/// supported type, and names most refused ones (SVG, WebP, PDF...); `name` runs the text checks, on the first
/// `namingBytes` only, for a refused body that the first step could only call data (HTML, XML, plain text).
final class Sniffer {
    /// What the bytes are: the verdict the fetch loop reads to cap a body.
    typealias Verdict = SniffVerdict

    /// How much of a refused body the naming step reads: enough for a document's opening tags; the text
    /// checks' cost grows with the square of the line count (~10 ms for both questions at 512 bytes of
    /// newlines, 200 ms at 4 KB, measured with file 5.44).
    static let namingBytes = 512

    // One handle for every question: the database is loaded once (8 MB on Debian 12).
    private let magic: MagicHandle

    init() throws(SnifferError) {
        magic = try MagicHandle()
    }

    /// The verdict on `bytes`, the first bytes of a body: both steps.
    func sniff(_ bytes: UnsafeRawBufferPointer) -> Verdict {
        check(bytes) ?? name(bytes)
    }

    /// The verdict on `bytes`.
    func sniff(_ bytes: [UInt8]) -> Verdict {
        bytes.withUnsafeBytes { sniff($0) }
    }

    /// The first step: the verdict, or nil when the body is refused but libmagic could only call it data
    /// without its text checks (then `name` says what it is).
    func check(_ bytes: UnsafeRawBufferPointer) -> Verdict? {
        do {
            let mimeType = try magic.identify(bytes, mime: true)
            // The description is needed only to tell MPEG-1 from MPEG-2, and to name a refused type.
            if mimeType != "video/mpeg", let type = MediaType.fromMagic(mime: mimeType, description: "") {
                return .supported(type)
            }
            let description = try magic.identify(bytes, mime: false)
            if let type = MediaType.fromMagic(mime: mimeType, description: description) { return .supported(type) }
            if mimeType == "application/octet-stream" { return nil }
            if let source = MediaType.convertibleFromMagic(mime: mimeType) {
                return .convertible(source, Self.summary(mimeType, description))
            }
            return .unsupported(Self.summary(mimeType, description))
        } catch {
            return .unsupported("unidentified (\(error.detail))")
        }
    }

    /// The second step: what a refused body is, with libmagic's text checks, from its first `namingBytes`.
    func name(_ bytes: UnsafeRawBufferPointer) -> Verdict {
        let prefix = UnsafeRawBufferPointer(rebasing: bytes.prefix(Self.namingBytes))
        do {
            let mimeType = try magic.identify(prefix, mime: true, text: true)
            let description = try magic.identify(prefix, mime: false, text: true)
            if let source = MediaType.convertibleFromMagic(mime: mimeType) {
                return .convertible(source, Self.summary(mimeType, description))
            }
            return .unsupported(Self.summary(mimeType, description))
        } catch {
            return .unsupported("unidentified (\(error.detail))")
        }
    }

    private static func summary(_ mimeType: String, _ description: String) -> String {
        "\(mimeType) (\(description.split(separator: ",").first.map(String.init) ?? description))"
    }
}

@available(*, unavailable)
extension Sniffer: Sendable {}
