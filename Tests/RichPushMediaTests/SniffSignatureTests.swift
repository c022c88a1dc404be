import RichPushCore
import RichPushTestSupport
import Testing

@testable import RichPushMedia

/// The types a head's opening bytes name (`MediaSignature`), asked before libmagic's database: never another medium
/// than the database names, and the same type for random heads. Off the pool: its bodies are seconds of CPU (libmagic
/// over 11,000 heads), which on the pool's two threads held every timed test beside them (seen: a probe's 10 s
/// deadline passing before its second ask, a conversion's poll not resuming while the conversion ran).
@Suite("Sniff signatures", .offPool)
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

    static let signatures: [Signature] =
        [
            Signature("image/jpeg", bytes: [0xFF, 0xD8, 0xFF]),
            Signature(
                "image/png",
                bytes: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D] + Array("IHDR".utf8)),
            Signature("image/gif", (0, "GIF87a")),
            Signature("image/gif", (0, "GIF89a")),
            Signature("audio/x-wav", (0, "RIFF"), (8, "WAVE")),
            Signature("video/x-msvideo", (0, "RIFF"), (8, "AVI ")),
            Signature("audio/x-aiff", (0, "FORM"), (8, "AIFF")),
            Signature("video/mp4", (0, "\0\0\0"), (4, "ftypisom")),
            Signature("video/mp4", (0, "\0\0\0"), (4, "ftypmp41")),
            Signature("video/mp4", (0, "\0\0\0"), (4, "ftypmp42")),
            Signature("audio/x-m4a", (0, "\0\0\0"), (4, "ftypM4A ")),
        ] + convertibles

    /// The images to convert whose opening bytes name them.
    static let convertibles: [Signature] = [
        Signature("image/webp", (0, "RIFF"), (8, "WEBP")),
        Signature("image/heic", (0, "\0\0\0"), (4, "ftypheic")),
        Signature("image/heic", (0, "\0\0\0"), (4, "ftypheix")),
        Signature("image/heif", (0, "\0\0\0"), (4, "ftypmif1")),
        Signature("image/avif", (0, "\0\0\0"), (4, "ftypavif")),
        Signature("image/avif", (0, "\0\0\0"), (4, "ftypavis")),
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
            // One draw a byte, by hand: `random(in:using:)` is generic, and unspecialized in a debug build it made
            // these 11,000 heads take seconds.
            var head = [UInt8](repeating: 0, count: max(length, signature.length))
            for position in head.indices {
                let draw = random.next()
                switch index % 3 {
                case 0: head[position] = UInt8(truncatingIfNeeded: draw)
                case 1: head[position] = draw & 7 == 0 ? UInt8(truncatingIfNeeded: draw >> 8) : 0
                default: head[position] = alphabet[Int((draw >> 8) % UInt64(alphabet.count))]
                }
            }
            for part in signature.parts {
                head.replaceSubrange(part.offset..<part.offset + part.bytes.count, with: part.bytes)
            }
            // A DOS boot sector's mark, which the database ranks above ISO Media, RIFF and IFF: `otherFormatsMarks`.
            if head.count >= 512, head[510] == 0x55, head[511] == 0xAA { head[511] = 0 }
            return head
        }
    }

    /// The MIME type the opening bytes name, or nil.
    static func named(_ head: [UInt8]) -> String? { head.withUnsafeBytes { MediaSignature.mimeType($0) } }

    /// Fixtures and the MIME type their opening bytes name (nil: left to the database).
    static let fixtureTypes: [(String, String?)] = [
        ("photo.jpg", "image/jpeg"), ("logo.png", "image/png"), ("anim.gif", "image/gif"), ("chime.wav", "audio/x-wav"),
        ("clip.avi", "video/x-msvideo"), ("chime.aiff", "audio/x-aiff"), ("clip.mp4", "video/mp4"),
        ("chime.m4a", "audio/x-m4a"), ("photo.heic", "image/heic"), ("banner.webp", "image/webp"),
        ("photo.avif", "image/avif"), ("anim.avif", "image/avif"),
        // Left to the database.
        ("chime.mp3", nil), ("error-page.html", nil), ("clip-mpeg2.mpg", nil), ("photo.bmp", nil), ("photo.tiff", nil),
        ("icon.svg", nil),
    ]

    /// The fixtures their opening bytes name.
    static let namedFixtures = fixtureTypes.compactMap { $0.1 == nil ? nil : $0.0 }

    @Test(
        "the opening bytes name each fixture of their types as libmagic's database does, and no other",
        arguments: fixtureTypes)
    func fixtures(_ name: String, _ mime: String?) throws {
        let database = try MagicHandle()
        let head = Array(fixture(name).prefix(4096))
        #expect(Self.named(head) == mime)
        if let mime { #expect(try head.withUnsafeBytes { try database.identify($0, mime: true) } == mime) }
    }

    @Test("the opening bytes name a random head only as libmagic's database names it", arguments: signatures)
    func agreesWithDatabase(_ signature: Signature) throws {
        let database = try MagicHandle()
        var named = 0
        let heads = Self.heads(signature, count: 1_000, seed: 26)
        for head in heads {
            guard let byBytes = Self.named(head) else { continue }
            named += 1
            #expect(byBytes == signature.mime)
            let byDatabase = try head.withUnsafeBytes { try database.identify($0, mime: true) }
            #expect(byBytes == byDatabase, "\(head.prefix(24))... (\(head.count) bytes)")
        }
        // Only a JPEG's heads of 3 bytes go unnamed (a fourth byte is wanted, as the database's rule does).
        #expect(named >= heads.count * 9 / 10, "\(named) of \(heads.count) named")
    }

    @Test("every fixture cut short, to 0-40 bytes: named only where the database names the same")
    func shortHeads() throws {
        let database = try MagicHandle()
        var named = 0
        for name in Self.namedFixtures {
            let whole = fixture(name)
            for length in 0...40 {
                let head = Array(whole.prefix(length))
                guard let byBytes = Self.named(head) else { continue }
                named += 1
                let byDatabase = try head.withUnsafeBytes { try database.identify($0, mime: true) }
                #expect(byDatabase == byBytes, "\(name) \(length)")
            }
        }
        #expect(named > 200, "\(named) short heads named")
    }

    /// The supported types and the images to convert, by libmagic's MIME types.
    static func isMedia(_ mime: String) -> Bool {
        MediaType.fromMagic(mime: mime, description: "") != nil || mime == "video/mpeg"
            || MediaType.convertibleFromMagic(mime: mime) != nil
    }

    @Test("another medium's signature planted past the opening bytes never makes the database name another medium")
    func plantedMedia() throws {
        let database = try MagicHandle()
        let marks: [[UInt8]] = [
            [0xFF, 0xD8, 0xFF, 0xE0],
            [0x89] + Array("PNG\r\n".utf8) + [0x1A, 0x0A, 0, 0, 0, 0x0D] + Array("IHDR".utf8),
            Array("GIF89a".utf8), Array("RIFF\0\0\0\0WEBPVP8 ".utf8), [0, 0, 0, 0x18] + Array("ftypheic".utf8),
            [0, 0, 0, 0x18] + Array("ftypavif".utf8), [0, 0, 0, 0x18] + Array("ftypqt  ".utf8),
            Array("ID3\u{4}\0".utf8),
            [0xFF, 0xFB, 0x90, 0x64], Array("<svg xmlns".utf8), Array("BM".utf8), Array("II*\0".utf8),
            [0, 0, 1, 0xBA, 0x44], Array("RIFF\0\0\0\0WAVEfmt ".utf8), Array("FORM\0\0\0\0AIFF".utf8),
        ]
        var compared = 0
        for name in Self.namedFixtures {
            let original = Array(fixture(name).prefix(4096))
            let own = try #require(Self.named(original))
            for mark in marks {
                for offset in [4, 8, 12, 16, 20, 32, 64, 128, 256, 510, 1024] {
                    var head = original
                    head.replaceSubrange(offset..<offset + mark.count, with: mark)
                    guard let byBytes = Self.named(head) else { continue }
                    compared += 1
                    #expect(byBytes == own)
                    let byDatabase = try head.withUnsafeBytes { try database.identify($0, mime: true) }
                    #expect(
                        byDatabase == byBytes || !Self.isMedia(byDatabase),
                        "\(name), \(mark) at \(offset): \(byDatabase)")
                }
            }
        }
        #expect(compared > 1_000, "\(compared) planted heads compared")
    }

    @Test(
        "an image to convert named by its opening bytes has the verdict libmagic's database gives, at once and not",
        arguments: convertibles)
    func convertibleVerdicts(_ signature: Signature) throws {
        let database = try MagicHandle()
        let sniffer = try Sniffer()
        var compared = 0
        for head in Self.heads(signature, count: 300, seed: 27) where Self.named(head) != nil {
            let mime = try head.withUnsafeBytes { try database.identify($0, mime: true) }
            let description = try head.withUnsafeBytes { try database.identify($0, mime: false) }
            guard let type = MediaType.convertibleFromMagic(mime: mime) else {
                Issue.record("the database calls \(head.prefix(24)) \(mime) (\(description))")
                continue
            }
            compared += 1
            let lead = description.split(separator: ",").first.map(String.init) ?? description
            let expected = Sniffer.Verdict.convertible(type, "\(mime) (\(lead))")
            #expect(head.withUnsafeBytes { sniffer.check($0) } == expected)
            #expect(head.withUnsafeBytes { sniffer.quickCheck($0) } == .verdict(expected))
        }
        #expect(compared >= 270, "\(compared) heads compared")
    }

    /// Heads of a supported type, or of an image to convert, whose later bytes the database, ranking another format's
    /// rule above the type's, reads as that format or as data: refused before; the type their opening bytes say now
    /// (an image to convert then goes to libvips, which decodes it or refuses it).
    @Test(
        "a head carrying another format's marks further on is the type its opening bytes say",
        arguments: [
            ("clip.mp4", 510, [0x55, 0xAA], .supported(.mp4), "application/octet-stream"),
            ("chime.wav", 510, [0x55, 0xAA], .supported(.wav), "application/octet-stream"),
            ("clip.mp4", 256, Array("SEGA".utf8), .supported(.mp4), "application/x-genesis-rom"),
            ("chime.aiff", 4, [0, 0, 0xFF, 0x99], .supported(.aiff), "application/vnd.pagemaker"),
            ("chime.wav", 4, Array("moov".utf8), .supported(.wav), "video/quicktime"),
            ("banner.webp", 510, [0x55, 0xAA], Self.webp, "application/octet-stream"),
            ("banner.webp", 4, Array("moov".utf8), Self.webp, "video/quicktime"),
            (
                "photo.heic", 256, Array("SEGA".utf8), .convertible(.heic, "image/heic (ISO Media)"),
                "application/x-genesis-rom"
            ),
            (
                "photo.avif", 510, [0x55, 0xAA], .convertible(.avif, "image/avif (ISO Media)"),
                "application/octet-stream"
            ),
        ] as [(String, Int, [UInt8], Sniffer.Verdict, String)])
    func otherFormatsMarks(
        _ name: String, _ offset: Int, _ mark: [UInt8], _ verdict: Sniffer.Verdict, _ before: String
    ) throws {
        var head = Array(fixture(name).prefix(4096))
        head.replaceSubrange(offset..<offset + mark.count, with: mark)
        // libmagic's database alone says another format, or data.
        let database = try MagicHandle()
        #expect(try head.withUnsafeBytes { try database.identify($0, mime: true) } == before)
        // On the sniffer's thread and at once alike.
        let sniffer = try Sniffer()
        #expect(sniffer.sniff(head) == verdict)
        #expect(head.withUnsafeBytes { sniffer.quickCheck($0) } == .verdict(verdict))
    }

    /// A WebP's verdict, its description's lead as libmagic's database gives it for a plain WebP.
    static let webp = Sniffer.Verdict.convertible(.webp, "image/webp (RIFF (little-endian) data)")
}
