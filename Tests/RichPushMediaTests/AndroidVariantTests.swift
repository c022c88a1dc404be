import RichPushCore
import Testing

@testable import RichPushMedia

@Suite("Android variants: what FCM's Android code shows, decided from the media's record")
struct AndroidVariantTests {
    let variant = AndroidVariant(maximumDimension: 1440)

    func media(_ type: MediaType, bytes: Int = 100_000, size: ImageSize? = ImageSize(width: 1200, height: 800))
        -> FetchedMedia
    {
        FetchedMedia(
            path: "/r/a/b.\(type.fileExtension)", directory: "/r/a", type: type, bytes: bytes, sha256: "00",
            dimensions: size)
    }

    /// A JPEG's head: SOI, `segments` (marker and data), a frame header, and a scan header (`scan`).
    static func jpeg(_ segments: [(UInt8, [UInt8])] = [], scan: Bool = true) -> [UInt8] {
        var bytes: [UInt8] = [0xFF, 0xD8]
        let jfif: (UInt8, [UInt8]) = (0xE0, Array("JFIF\0".utf8) + [1, 1, 0, 0, 1, 0, 1, 0, 0])
        let frame: (UInt8, [UInt8]) = (0xC0, [8, 0, 120, 0, 160, 3] + [UInt8](repeating: 0, count: 9))
        let start: (UInt8, [UInt8]) = (0xDA, [UInt8](repeating: 0, count: 10))
        for (marker, data) in [jfif] + segments + [frame] + (scan ? [start] : []) {
            bytes += [0xFF, marker, UInt8((data.count + 2) >> 8), UInt8((data.count + 2) & 0xFF)] + data
        }
        return bytes
    }

    /// A PNG: its signature, IHDR, then `chunks` (type and data), IEND.
    static func png(_ chunks: [(String, [UInt8])]) -> [UInt8] {
        let header: [UInt8] = [0, 0, 0, 160, 0, 0, 0, 120, 8, 6, 0, 0, 0]
        return ([("IHDR", header)] + chunks + [("IEND", [])]).reduce(PNGChunks.signature) {
            $0 + PNGChunks.chunk($1.0, $1.1)
        }
    }

    static let exif = Array("Exif\0\0".utf8)
    static let idat: (String, [UInt8]) = ("IDAT", [1, 2, 3])

    @Test("a still JPEG or PNG within 1 MiB and 1440 pixels a side, upright, without metadata, is kept as it is")
    func kept() {
        // An ICC profile (APP2), Adobe's colour transform (APP14), a pixel density (pHYs): how it looks, not who
        // made it.
        let jpeg = Self.jpeg([(0xE2, Array("ICC_PROFILE\0".utf8)), (0xEE, Array("Adobe".utf8))])
        #expect(variant.decision(for: media(.jpeg), head: jpeg) == .keep)
        #expect(
            variant.decision(for: media(.jpeg), head: Self.jpeg([(0xE1, Self.exif + PNGChunks.exif(orientation: 1))]))
                != .keep, "an orientation of 1 is still EXIF")
        #expect(
            variant.decision(
                for: media(.png, bytes: 1_048_576, size: ImageSize(width: 1440, height: 1440)),
                head: Self.png([("pHYs", [0, 0, 11, 19, 0, 0, 11, 19, 1]), Self.idat])) == .keep)
    }

    @Test("what a JPEG or PNG carries beside its picture: each a reason to convert, named")
    func carried() {
        let rotated =
            "EXIF orientation 6 (Android's BitmapFactory ignores it: the picture would show turned; the variant is "
            + "upright)"
        let cases: [(MediaType, [UInt8], [String])] = [
            (
                .jpeg, Self.jpeg([(0xE1, Self.exif + PNGChunks.exif(orientation: 6))]),
                [rotated, "metadata (EXIF), which the variant strips"]
            ),
            (.jpeg, Self.jpeg([(0xFE, Array("Lavc59".utf8))]), ["metadata (a comment), which the variant strips"]),
            (
                .jpeg, Self.jpeg([(0xE1, Array("http://ns.adobe.com/xap/1.0/\0<x/>".utf8)), (0xED, [0])]),
                ["metadata (XMP, IPTC (APP13)), which the variant strips"]
            ),
            (.jpeg, Self.jpeg(scan: false), ["its structure could not be read to the picture"]),
            (.jpeg, [], ["its metadata could not be read"]),
            (
                .png, Self.png([("acTL", [0, 0, 0, 2, 0, 0, 0, 0]), Self.idat]),
                ["an animated PNG (Android shows its first frame; the variant is that frame)"]
            ),
            (
                .png, Self.png([Self.idat, ("tEXt", Array("Author\0me".utf8)), ("tIME", [7, 234, 12, 2, 9, 0, 0])]),
                ["metadata (text, a time stamp), which the variant strips"]
            ),
            (
                .png, Self.png([("eXIf", PNGChunks.exif(orientation: 6)), Self.idat]),
                [rotated, "metadata (EXIF), which the variant strips"]
            ),
        ]
        for (type, head, reasons) in cases {
            #expect(variant.decision(for: media(type), head: head) == .convert(reasons), "\(type.mime) \(reasons)")
        }
    }

    @Test("video and audio are refused for Android, saying it shows neither")
    func refused() {
        for type in [MediaType.mp4, .mp3, .m4a, .avi] {
            guard case .refuse(let failure) = variant.decision(for: media(type, size: nil), head: []) else {
                Issue.record("\(type.mime) not refused")
                continue
            }
            #expect(failure.code == .unsupportedType)
            #expect(failure.detail.contains("neither video nor audio"))
        }
    }

    @Test("every way out of bounds is a reason to convert, each named")
    func converted() {
        let cases: [(FetchedMedia, [String])] = [
            (media(.gif), ["a GIF (Android shows its first frame; the variant is that frame)"]),
            (media(.webp), ["image/webp, not JPEG or PNG"]),
            (media(.jpeg, bytes: 1_048_577), ["1048577 bytes, over FCM's Android limit of 1048576"]),
            (
                media(.png, size: ImageSize(width: 800, height: 1441)),
                ["800 x 1441 pixels, longer than 1440 on a side"]
            ),
            (media(.jpeg, size: nil), ["its dimensions are not known from its header"]),
            (
                media(.heic, bytes: 2_000_000, size: ImageSize(width: 4032, height: 3024)),
                [
                    "image/heic, not JPEG or PNG", "2000000 bytes, over FCM's Android limit of 1048576",
                    "4032 x 3024 pixels, longer than 1440 on a side",
                ]
            ),
        ]
        for (media, reasons) in cases {
            #expect(variant.decision(for: media, head: []) == .convert(reasons), "\(media.type.mime)")
        }
    }

    @Test("a JPEG's metadata segments and trailing bytes are dropped, every other byte kept; nil when unfollowable")
    func jpegSegments() {
        let junk = Array("<html>".utf8)
        for progressive in [false, true] {
            // Fill bytes between segments (two, before SOF) are dropped too: they are nothing.
            let filled = ImageStructureTests.jpeg(progressive: progressive, fill: true).bytes
            let clean = ImageStructureTests.jpeg(progressive: progressive).bytes
            // After SOI and APP0 (20 bytes): a comment, an EXIF block with a GPS position's bytes, an XMP packet.
            var texted = Array(clean[..<20])
            texted += ImageStructureTests.segment(0xFE, Array("Lavc59".utf8))
            texted += ImageStructureTests.segment(0xE1, Self.exif + PNGChunks.exif(orientation: 1) + Array("GPS".utf8))
            texted += ImageStructureTests.segment(0xE1, Array("http://ns.adobe.com/xap/1.0/\0secret".utf8))
            texted += Array(filled[20...]) + junk
            #expect(JPEGSegments.stripped(texted) == clean, "progressive: \(progressive)")
            #expect(JPEGSegments.stripped(clean) == clean)
            #expect(JPEGSegments.stripped(Array(clean.dropLast(2))) == nil, "no EOI")
        }
        #expect(JPEGSegments.stripped(ImageStructureTests.jpeg(garbage: true).bytes) == nil)
    }
}
