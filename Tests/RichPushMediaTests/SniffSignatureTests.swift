import RichPushCore
import RichPushTestSupport
import Testing

@testable import RichPushMedia

/// The sniffer's signature rules (`MagicHandle(signatures:)`), asked before the system's libmagic database: they name
/// a type only where the database names the same one.
@Suite("Sniff signatures")
struct SniffSignatureTests {
    /// A signature rule's bytes: `bytes` at `offset`, and the rule's MIME type.
    struct Signature: CustomTestStringConvertible, Sendable {
        let parts: [(offset: Int, bytes: [UInt8])]
        let mime: String
        var testDescription: String { mime + " " + parts.map { "\($0.bytes)@\($0.offset)" }.joined(separator: " ") }

        init(_ mime: String, _ parts: (Int, String)...) {
            self.mime = mime
            self.parts = parts.map { ($0.0, Array($0.1.utf8)) }
        }

        init(_ mime: String, bytes: [UInt8]) {
            self.mime = mime
            parts = [(0, bytes)]
        }

        /// The first bytes a head must have for the rule to be able to name it.
        var length: Int { parts.map { $0.offset + $0.bytes.count }.max()! }
    }

    static let signatures: [Signature] = [
        Signature("image/jpeg", bytes: [0xFF, 0xD8, 0xFF]),
        Signature(
            "image/png", bytes: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D] + Array("IHDR".utf8)),
        Signature("image/gif", (0, "GIF87a")),
        Signature("image/gif", (0, "GIF89a")),
        Signature("audio/x-wav", (0, "RIFF"), (8, "WAVE")),
        Signature("video/x-msvideo", (0, "RIFF"), (8, "AVI ")),
        Signature("audio/x-aiff", (0, "FORM"), (8, "AIFF")),
        Signature("video/mp4", (0, "\0\0\0"), (4, "ftypisom")),
        Signature("video/mp4", (0, "\0\0\0"), (4, "ftypmp41")),
        Signature("video/mp4", (0, "\0\0\0"), (4, "ftypmp42")),
        Signature("audio/x-m4a", (0, "\0\0\0"), (4, "ftypM4A ")),
    ]

    /// Random heads opening with `signature`'s bytes: of every length from the signature's to 4 KB (the sniffing
    /// window), their other bytes random, mostly zero, or drawn from the bytes media files are made of.
    static func heads(_ signature: Signature, count: Int, seed: UInt64) -> [[UInt8]] {
        var random = SplitMix64(seed: seed)
        let alphabet: [UInt8] = [0, 0xFF, 0x10, 0x01, 0x02, 0x80] + Array("JFIFExifICCftypmoovmdatWAVEfmt data".utf8)
        return (0..<count).map { index in
            let length: Int
            switch index % 5 {
            case 0: length = signature.length + Int.random(in: 0..<32, using: &random)
            case 1: length = 16 + Int.random(in: 0..<512, using: &random)
            default: length = 4096
            }
            var head = (0..<max(length, signature.length)).map { _ -> UInt8 in
                switch index % 3 {
                case 0: return UInt8.random(in: 0...255, using: &random)
                case 1:
                    return Int.random(in: 0..<8, using: &random) == 0 ? UInt8.random(in: 0...255, using: &random) : 0
                default: return alphabet.randomElement(using: &random)!
                }
            }
            for part in signature.parts {
                head.replaceSubrange(part.offset..<part.offset + part.bytes.count, with: part.bytes)
            }
            // A DOS boot sector's mark, which the database ranks above ISO Media, RIFF and IFF: `bootSectorMark`.
            if head.count >= 512, head[510] == 0x55, head[511] == 0xAA { head[511] = 0 }
            return head
        }
    }

    @Test(
        "the signature rules load, and name each fixture of their types as the database does",
        arguments: [
            ("photo.jpg", "image/jpeg"), ("logo.png", "image/png"), ("anim.gif", "image/gif"),
            ("chime.wav", "audio/x-wav"),
            ("clip.avi", "video/x-msvideo"), ("chime.aiff", "audio/x-aiff"), ("clip.mp4", "video/mp4"),
            ("chime.m4a", "audio/x-m4a"),
            // Left to the database.
            ("photo.heic", "application/octet-stream"), ("banner.webp", "application/octet-stream"),
            ("chime.mp3", "application/octet-stream"), ("error-page.html", "application/octet-stream"),
            ("photo.avif", "application/octet-stream"), ("clip-mpeg2.mpg", "application/octet-stream"),
        ])
    func fixtures(_ name: String, _ mime: String) throws {
        let signatures = try MagicHandle(signatures: ())
        let database = try MagicHandle()
        let head = Array(fixture(name).prefix(4096))
        let named = try head.withUnsafeBytes { try signatures.identify($0, mime: true) }
        #expect(named == mime)
        if mime != "application/octet-stream" {
            #expect(try head.withUnsafeBytes { try database.identify($0, mime: true) } == mime)
        }
        #expect(try Sniffer().asksSignaturesFirst)
    }

    @Test("a signature names a random head only as the system's database names it", arguments: signatures)
    func agreesWithDatabase(_ signature: Signature) throws {
        let signatures = try MagicHandle(signatures: ())
        let database = try MagicHandle()
        var named = 0
        let heads = Self.heads(signature, count: 1_000, seed: 26)
        for head in heads {
            let byRule = try head.withUnsafeBytes { try signatures.identify($0, mime: true) }
            if byRule == "application/octet-stream" { continue }
            named += 1
            #expect(byRule == signature.mime)
            let byDatabase = try head.withUnsafeBytes { try database.identify($0, mime: true) }
            #expect(byRule == byDatabase, "\(head.prefix(24))... (\(head.count) bytes)")
        }
        // Only a JPEG's heads of 3 bytes go unnamed (the rule wants a fourth byte, as the database's does).
        #expect(named >= heads.count * 9 / 10, "\(named) of \(heads.count) named")
    }

    @Test("a head whose bytes 510 and 511 are a DOS boot sector's mark is its type, not data")
    func bootSectorMark() throws {
        for (name, type) in [("clip.mp4", MediaType.mp4), ("chime.wav", .wav)] {
            var head = Array(fixture(name).prefix(4096))
            head[510] = 0x55
            head[511] = 0xAA
            // The system's database alone ranks the boot sector first, and names no type for it.
            let database = try MagicHandle()
            #expect(try head.withUnsafeBytes { try database.identify($0, mime: true) } == "application/octet-stream")
            #expect(try Sniffer().sniff(head) == .supported(type), "\(name)")
        }
    }
}
