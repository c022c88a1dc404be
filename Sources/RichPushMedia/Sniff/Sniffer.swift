import RichPushCore
import RichPushFetch

/// Decides a body's type from its first bytes with libmagic, never from the URL or the Content-Type header.
/// Not thread-safe (it owns a libmagic handle): one per thread or serial queue.
///
/// Two steps, so that no body costs more than a few milliseconds: `check` takes the type the opening bytes name
/// (`MediaSignature`), else asks libmagic with its text checks off (no type iOS attaches is text; on 4 KB of newlines
/// those checks alone cost ~100 ms), and decides every supported type, and names most refused ones (SVG, WebP,
/// PDF...); `name` runs the text checks, on the first `namingBytes` only, for a refused body that the first step
/// could only call data (HTML, XML, plain text).
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

    /// The MIME type of `bytes`, text checks off: the one their opening bytes name (`MediaSignature`), with the
    /// lead of libmagic's description when that is known from them too, else libmagic's (lead nil).
    private func mimeType(_ bytes: UnsafeRawBufferPointer) throws(SnifferError) -> (type: String, lead: String?) {
        if let named = MediaSignature.mimeType(bytes) { return (named, MediaSignature.descriptionLead(of: named)) }
        return (try magic.identify(bytes, mime: true), nil)
    }

    /// libmagic's MIME type for bytes no rule names.
    private static let data = "application/octet-stream"

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
            let (mimeType, lead) = try mimeType(bytes)
            if let verdict = Self.verdict(mimeType: mimeType) { return verdict }
            // Data: `name` says what it is, with the text checks; libmagic's description would not.
            if mimeType == Self.data { return nil }
            return try described(bytes, mimeType: mimeType, lead: lead)
        } catch {
            return .unsupported("unidentified (\(error.detail))")
        }
    }

    /// What a check on the fetch loop's thread finds: only libmagic's questions that are quick on any head it is
    /// asked about (the MIME type; the description for an image to convert, whose text the verdict carries).
    enum QuickCheck: Equatable {
        /// The verdict, the same `check` gives.
        case verdict(Verdict)
        /// Data: `name` says what it is.
        case needsNaming
        /// Another type, whose verdict needs libmagic's description: `check` decides it.
        case undecided
    }

    /// `check` without libmagic's description unless the MIME type names an image to convert: the description of a
    /// head whose MIME type is a supported type or a refused one can cost far more than the MIME type (a JPEG head
    /// of 50 Exif segments: 7.5-8.2 ms, against 10 us), and only `check` on the sniffer's thread asks it.
    func quickCheck(_ bytes: UnsafeRawBufferPointer) -> QuickCheck {
        guard let (mimeType, lead) = try? mimeType(bytes) else { return .undecided }
        if let verdict = Self.verdict(mimeType: mimeType) { return .verdict(verdict) }
        if mimeType == Self.data { return .needsNaming }
        guard MediaType.convertibleFromMagic(mime: mimeType) != nil,
            let verdict = try? described(bytes, mimeType: mimeType, lead: lead)
        else { return .undecided }
        return .verdict(verdict)
    }

    /// The verdict libmagic's MIME type alone gives: a supported type (MPEG-1 and MPEG-2 share one MIME type, which
    /// the description tells apart), or nil.
    private static func verdict(mimeType: String) -> Verdict? {
        guard mimeType != "video/mpeg", let type = MediaType.fromMagic(mime: mimeType, description: "") else {
            return nil
        }
        return .supported(type)
    }

    /// The verdict with libmagic's description (or its `lead`, when the opening bytes gave it): MPEG-1 or MPEG-2, or
    /// a refused type named.
    private func described(
        _ bytes: UnsafeRawBufferPointer, mimeType: String, lead: String?
    ) throws(SnifferError) -> Verdict {
        let description: String
        if let lead { description = lead } else { description = try magic.identify(bytes, mime: false) }
        if let type = MediaType.fromMagic(mime: mimeType, description: description) { return .supported(type) }
        if let source = MediaType.convertibleFromMagic(mime: mimeType) {
            return .convertible(source, Self.summary(mimeType, description))
        }
        return .unsupported(Self.summary(mimeType, description))
    }

    /// The second step: what a refused body is, with libmagic's text checks, from its first `namingBytes`. A UTF-8
    /// byte-order mark at the start is passed over: libmagic's SVG and HTML rules look for their opening text at
    /// offset 0, so an SVG that began with one was `text/xml` (or `text/plain`) and refused, though libvips's
    /// svgload reads it (libxml2 takes the mark). The file itself keeps its mark.
    func name(_ bytes: UnsafeRawBufferPointer) -> Verdict {
        let text = bytes.starts(with: Self.byteOrderMark) ? UnsafeRawBufferPointer(rebasing: bytes.dropFirst(3)) : bytes
        let prefix = UnsafeRawBufferPointer(rebasing: text.prefix(Self.namingBytes))
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

    /// UTF-8's byte-order mark, which some editors put at the start of a text file.
    static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    private static func summary(_ mimeType: String, _ description: String) -> String {
        "\(mimeType) (\(description.split(separator: ",").first.map(String.init) ?? description))"
    }
}

@available(*, unavailable)
extension Sniffer: Sendable {}
