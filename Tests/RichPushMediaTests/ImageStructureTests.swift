import Foundation
import RichPushCore
import RichPushTestSupport
import Testing

@testable import RichPushMedia

/// The structure walks of JPEG, PNG and GIF (`MediaStructure`), without I/O: files built here byte by byte, whole,
/// cut at every byte, damaged on purpose, and fed in pieces of every size.
@Suite("Image structure: JPEG, PNG and GIF walked to their end markers")
struct ImageStructureTests {
    typealias Kind = VerdictKind

    /// A file built here, where its picture data begins and where its end marker ends.
    struct Built: Sendable, CustomTestStringConvertible {
        var name: String
        var type: MediaType
        var bytes: [UInt8]
        /// The length of the shortest prefix a phone shows part of (for a PNG, none: the whole file).
        var pictureFrom: Int
        /// The length of the file up to its end marker; any bytes after are trailing.
        var endsAt: Int

        var testDescription: String { name }
    }

    // MARK: - Builders

    static func bigEndian16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }

    static func segment(_ marker: UInt8, _ payload: [UInt8]) -> [UInt8] {
        [0xFF, marker] + bigEndian16(payload.count + 2) + payload
    }

    /// A baseline JPEG's structure (its tables are not meant to decode): SOI, APP0, DQT, SOF0, DHT, DRI, SOS, scan
    /// data holding stuffed 0xFF00 and restart markers, EOI. With `progressive`, a second scan follows a DHT.
    static func jpeg(progressive: Bool = false, fill: Bool = false, garbage: Bool = false, trailing: [UInt8] = [])
        -> Built
    {
        var bytes: [UInt8] = [0xFF, 0xD8]
        bytes += segment(0xE0, Array("JFIF\0".utf8) + [1, 1, 0, 0, 1, 0, 1, 0, 0])
        if garbage { bytes += [0x12, 0x34, 0x00] }  // extraneous bytes between segments: libjpeg skips them
        bytes += segment(0xDB, [0] + (1...64).map { UInt8($0) })
        if fill { bytes += [0xFF, 0xFF] }  // fill bytes before a marker
        bytes += segment(progressive ? 0xC2 : 0xC0, [8, 0, 16, 0, 16, 1, 1, 0x11, 0])
        bytes += segment(0xC4, [0x00] + [UInt8](repeating: 0, count: 15) + [1] + [0])
        bytes += segment(0xDD, bigEndian16(2))
        bytes += segment(0xDA, [1, 1, 0, 0, 63, 0])
        // A picture from the first byte of scan data on.
        let pictureFrom = bytes.count + 1
        // Scan data: a stuffed 0xFF00, restart markers, a run without 0xFF, a fill byte before a restart marker.
        bytes += [0x12, 0xFF, 0x00, 0x34, 0xFF, 0xD0, 0x56, 0xFF, 0x00, 0xFF, 0xD7, 0x78, 0x9A, 0xFF, 0xFF, 0xD1, 0xBC]
        if progressive {
            bytes += segment(0xC4, [0x10] + [UInt8](repeating: 0, count: 15) + [1] + [0])
            bytes += segment(0xDA, [1, 1, 0, 1, 63, 0x10])
            bytes += [0xFF, 0x00, 0xDE, 0xFF, 0xD2, 0xAD]
        }
        bytes += [0xFF, 0xD9]
        let endsAt = bytes.count
        return Built(
            name: (["JPEG"]
                + [
                    progressive ? "progressive" : nil, fill ? "fill bytes" : nil, garbage ? "extraneous bytes" : nil,
                    trailing.isEmpty ? nil : "trailing bytes",
                ].compactMap { $0 }).joined(separator: ", "),
            type: .jpeg, bytes: bytes + trailing, pictureFrom: pictureFrom, endsAt: endsAt)
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] { PNGChunks.chunk(type, data) }

    /// A PNG's structure: IHDR, an ancillary tEXt, PLTE, two IDATs, IEND.
    static func png(trailing: [UInt8] = []) -> Built {
        var bytes = PNGChunks.signature
        bytes += chunk("IHDR", [0, 0, 0, 4, 0, 0, 0, 4, 8, 3, 0, 0, 0])
        bytes += chunk("tEXt", Array("Comment\0hello".utf8))
        bytes += chunk("PLTE", [255, 0, 0, 0, 255, 0])
        bytes += chunk("IDAT", [0x78, 0x9C, 0x63, 0x60])
        bytes += chunk("IDAT", [0x60, 0x00, 0x00, 0x00, 0x05, 0x00, 0x01])
        bytes += chunk("IEND", [])
        return Built(
            name: "PNG\(trailing.isEmpty ? "" : ", trailing bytes")", type: .png, bytes: bytes + trailing,
            pictureFrom: bytes.count, endsAt: bytes.count)
    }

    /// A GIF's structure: header, logical screen with a global colour table, NETSCAPE loop and comment extensions,
    /// then `frames` frames (a graphic control extension, an image descriptor, the second with a local colour
    /// table, LZW data of two sub-blocks), the trailer.
    static func gif(version: String = "89a", frames: Int = 3, trailing: [UInt8] = []) -> Built {
        var bytes = Array("GIF\(version)".utf8) + [4, 0, 4, 0, 0x81, 0, 0] + [UInt8](repeating: 7, count: 12)
        bytes += [0x21, 0xFF, 11] + Array("NETSCAPE2.0".utf8) + [3, 1, 0, 0, 0]
        bytes += [0x21, 0xFE, 5] + Array("hello".utf8) + [3] + Array("GIF".utf8) + [0]
        var pictureFrom = 0
        for frame in 0..<frames {
            bytes += [0x21, 0xF9, 4, 4, 5, 0, 0, 0]
            bytes += [0x2C, 0, 0, 0, 0, 4, 0, 4, 0, frame == 1 ? 0x80 : 0]
            if frame == 1 { bytes += [1, 2, 3, 4, 5, 6] }
            if frame == 0 { pictureFrom = bytes.count + 1 }
            bytes += [2, 3, 0x84, 0x1D, 0x81, 2, 0x7A, 0x50, 0]
        }
        bytes += [0x3B]
        return Built(
            name: "GIF\(version), \(frames) frames\(trailing.isEmpty ? "" : ", trailing bytes")", type: .gif,
            bytes: bytes + trailing, pictureFrom: pictureFrom == 0 ? bytes.count + 1 : pictureFrom, endsAt: bytes.count)
    }

    static let trailing = Array("<html><script>alert(1)</script></html>\n".utf8) + [0xFF, 0xD8, 0xFF, 0xD9, 0x3B, 0]

    static let built: [Built] = [
        jpeg(), jpeg(progressive: true), jpeg(fill: true, garbage: true), jpeg(trailing: trailing),
        png(), png(trailing: trailing),
        gif(), gif(version: "87a", frames: 1), gif(trailing: trailing),
    ]

    // MARK: - Feeding

    /// The walk of `bytes` fed in pieces of `piece` bytes (all at once when nil).
    static func walked(_ bytes: [UInt8], _ type: MediaType, piece: Int? = nil) -> MediaStructure {
        StructureFeeding.walked(bytes, type, piece: piece)
    }

    /// The verdict on `bytes` fed in pieces of `piece` bytes (all at once when nil).
    static func verdict(_ bytes: [UInt8], _ type: MediaType, piece: Int? = nil) -> MediaStructure.Verdict {
        StructureFeeding.verdict(bytes, type, piece: piece)
    }

    // MARK: - Whole, cut, split

    @Test("a whole file is whole, its trailing bytes ignored", arguments: built)
    func whole(_ file: Built) {
        #expect(Self.verdict(file.bytes, file.type) == .whole)
    }

    @Test(
        "cut at every byte: nothing before the picture data, part after it (a PNG: nothing), whole from its end marker",
        arguments: built)
    func cutEverywhere(_ file: Built) {
        for length in 0..<file.bytes.count {
            let expected: Kind
            if length >= file.endsAt {
                expected = .whole
            } else {
                expected = length >= file.pictureFrom ? .showsPart : .showsNothing
            }
            let verdict = Self.verdict(Array(file.bytes.prefix(length)), file.type)
            #expect(Kind(verdict) == expected, "cut at \(length) of \(file.bytes.count): \(verdict)")
            if case .showsPart(let detail) = verdict { #expect(detail.contains("cut short"), "\(detail)") }
        }
    }

    @Test("fed in pieces of every size, and split at every byte, the verdict is the same", arguments: built)
    func pieces(_ file: Built) {
        for piece in 1...file.bytes.count {
            #expect(Self.verdict(file.bytes, file.type, piece: piece) == .whole, "pieces of \(piece)")
        }
        // Cut short, byte by byte: the same detail as all at once.
        let cut = Array(file.bytes.prefix(file.endsAt - 1))
        #expect(Self.verdict(cut, file.type, piece: 1) == Self.verdict(cut, file.type))
    }

    // MARK: - Faults

    struct Fault: Sendable, CustomTestStringConvertible {
        var name: String
        var type: MediaType
        var bytes: [UInt8]
        var expected: Kind
        /// Words the detail must hold.
        var detail: String

        var testDescription: String { name }
    }

    /// Where `part` first occurs in `bytes`.
    static func position(of part: [UInt8], in bytes: [UInt8]) -> Int {
        (0...(bytes.count - part.count)).first { Array(bytes[$0..<($0 + part.count)]) == part }!
    }

    static func replacing(_ bytes: [UInt8], _ old: [UInt8], _ new: [UInt8]) -> [UInt8] {
        let start = position(of: old, in: bytes)
        return Array(bytes[..<start]) + new + Array(bytes[(start + old.count)...])
    }

    static let faults: [Fault] = {
        let jpeg = Self.jpeg().bytes
        let sof = segment(0xC0, [8, 0, 16, 0, 16, 1, 1, 0x11, 0])
        let png = Self.png().bytes
        let idat = chunk("IDAT", [0x78, 0x9C, 0x63, 0x60])
        let gif = Self.gif().bytes
        let stuffedFirst = replacing(jpeg, [0x3F, 0x00, 0x12], [0x3F, 0x00, 0xFF, 0x00])
        let ihdr = chunk("IHDR", [0, 0, 0, 4, 0, 0, 0, 4, 8, 3, 0, 0, 0])
        return [
            Fault(
                name: "JPEG without SOI", type: .jpeg, bytes: Array(jpeg.dropFirst(2)), expected: .showsNothing,
                detail: "start-of-image"),
            Fault(
                name: "JPEG with a segment length of 1 among its headers", type: .jpeg,
                bytes: replacing(jpeg, [0xFF, 0xDD, 0, 4], [0xFF, 0xDD, 0, 1]), expected: .showsNothing,
                detail: "less than 2"),
            Fault(
                name: "JPEG with a scan before its frame header", type: .jpeg, bytes: replacing(jpeg, sof, []),
                expected: .showsNothing, detail: "before any frame header"),
            Fault(
                name: "JPEG ending before any scan", type: .jpeg, bytes: Array(jpeg.prefix(20)) + [0xFF, 0xD9],
                expected: .showsNothing, detail: "before any scan data"),
            Fault(
                name: "JPEG ending right after its scan header", type: .jpeg,
                bytes: replacing(jpeg, [0x3F, 0x00, 0x12], [0x3F, 0x00, 0xFF, 0xD9]), expected: .showsNothing,
                detail: "before any scan data"),
            Fault(
                name: "JPEG cut after a stuffed 0xFF00 opening its scan data", type: .jpeg,
                bytes: Array(stuffedFirst.prefix(position(of: [0x3F, 0x00, 0xFF, 0x00], in: stuffedFirst) + 4)),
                expected: .showsPart,
                detail: "no end-of-image marker"),
            Fault(
                name: "JPEG with a reserved marker in its scan data", type: .jpeg,
                bytes: replacing(jpeg, [0x56, 0xFF, 0x00], [0x56, 0xFF, 0x9E]), expected: .showsPart, detail: "FF 9E"),
            Fault(
                name: "JPEG with a segment length of 0 between scans", type: .jpeg,
                bytes: replacing(jpeg, [0xBC, 0xFF, 0xD9], [0xBC, 0xFF, 0xC4, 0, 0, 0xFF, 0xD9]), expected: .showsPart,
                detail: "less than 2"),
            Fault(
                name: "JPEG cut inside a segment after its scan", type: .jpeg,
                bytes: replacing(jpeg, [0xBC, 0xFF, 0xD9], [0xBC, 0xFF, 0xFE, 0x10, 0x00, 1, 2, 0xFF, 0xD9]),
                expected: .showsPart,
                detail: "FF FE at byte"),
            Fault(
                name: "PNG without its signature", type: .png, bytes: [0x89] + Array(png.dropFirst(2)),
                expected: .showsNothing, detail: "signature"),
            Fault(
                name: "PNG whose IDAT fails its CRC", type: .png,
                bytes: replacing(png, idat, Array(idat.prefix(9)) + [idat[9] ^ 1] + Array(idat.dropFirst(10))),
                expected: .showsNothing, detail: "IDAT chunk at byte 76 fails its CRC"),
            Fault(
                name: "PNG whose IHDR fails its CRC", type: .png,
                bytes: replacing(png, ihdr, Array(ihdr.dropLast()) + [ihdr.last! ^ 1]), expected: .showsNothing,
                detail: "IHDR"),
            Fault(
                name: "PNG starting with another chunk than IHDR", type: .png,
                bytes: replacing(png, ihdr, []), expected: .showsNothing, detail: "does not start with IHDR"),
            Fault(
                name: "PNG with no IDAT", type: .png,
                bytes: replacing(
                    replacing(png, idat, []), chunk("IDAT", [0x60, 0x00, 0x00, 0x00, 0x05, 0x00, 0x01]), []),
                expected: .showsNothing, detail: "no IDAT"),
            Fault(
                name: "PNG with a chunk type that is no letters", type: .png,
                bytes: replacing(png, Array("tEXt".utf8), [0x74, 0x45, 0x31, 0x74]), expected: .showsNothing,
                detail: "no valid chunk"),
            Fault(
                name: "PNG declaring a chunk over 2^31 - 1 bytes", type: .png,
                bytes: replacing(
                    png, [0, 0, 0, 13, 0x74, 0x45, 0x58, 0x74], [0x80, 0, 0, 13, 0x74, 0x45, 0x58, 0x74]),
                expected: .showsNothing, detail: "more than a PNG chunk may hold"),
            Fault(
                name: "GIF with another signature", type: .gif, bytes: Array("GIF88a".utf8) + Array(gif.dropFirst(6)),
                expected: .showsNothing, detail: "GIF87a or GIF89a"),
            Fault(
                name: "GIF with a trailer and no image", type: .gif, bytes: Array(gif.prefix(25)) + [0x3B],
                expected: .showsNothing, detail: "no image before its trailer"),
            Fault(
                name: "GIF with a byte that starts no block before any image", type: .gif,
                bytes: Array(gif.prefix(25)) + [0x00, 0x3B],
                expected: .showsNothing, detail: "starts no block"),
            Fault(
                name: "GIF with a byte that starts no block after an image", type: .gif,
                bytes: Array(gif.dropLast()) + [0x42, 0x3B], expected: .showsPart, detail: "(0x42) starts no block"),
        ]
    }()

    @Test(
        "a damaged file: refused where a phone shows nothing, else shown in part; the detail says where",
        arguments: faults)
    func fault(_ fault: Fault) {
        let verdict = Self.verdict(fault.bytes, fault.type)
        #expect(Kind(verdict) == fault.expected, "\(verdict)")
        switch verdict {
        case .whole: break
        case .showsPart(let detail), .showsNothing(let detail), .unbounded(let detail):
            #expect(detail.contains(fault.detail), "\(detail)")
        }
        #expect(Self.verdict(fault.bytes, fault.type, piece: 1) == verdict, "fed byte by byte")
    }

    @Test(
        """
        a JPEG of more than 500 scans is unbounded to decode (each scan reads the whole picture again), found at the \
        501st scan header, data or not; 500 are whole
        """)
    func tooManyScans() {
        let jpeg = Self.jpeg(progressive: true).bytes
        let end = jpeg.count - 2
        // Scans 3 to n: a refinement scan's header and a byte of data each, the last with none.
        func scans(_ count: Int) -> [UInt8] {
            var bytes = Array(jpeg[..<end])
            for index in 3...count {
                bytes += Self.segment(0xDA, [1, 1, 0, 1, 63, 0x10]) + (index == count ? [] : [0x5A])
            }
            return bytes + [0xFF, 0xD9]
        }
        #expect(Self.verdict(scans(JPEGStructure.maximumScans), .jpeg) == .whole)
        let refused = Self.verdict(scans(JPEGStructure.maximumScans + 1), .jpeg)
        guard case .unbounded(let detail) = refused else {
            Issue.record("\(refused)")
            return
        }
        #expect(detail.contains("more than 500 scans"), "\(detail)")
        #expect(Self.verdict(scans(JPEGStructure.maximumScans + 1), .jpeg, piece: 7) == refused, "fed in pieces")
    }

    @Test("an ancillary chunk's CRC is not checked (libpng drops such a chunk, and shows the picture)")
    func ancillaryCRC() {
        let png = Self.png().bytes
        let text = Self.chunk("tEXt", Array("Comment\0hello".utf8))
        let broken = Self.replacing(png, text, Array(text.dropLast()) + [text.last! ^ 0xFF])
        #expect(Self.verdict(broken, .png) == .whole)
    }

    @Test("every type attached as fetched has a walk; no type converted first (its conversion decodes it)")
    func types() {
        for type in MediaType.all + MediaType.convertible {
            #expect((MediaStructure(type) != nil) == MediaType.all.contains(type), "\(type.mime)")
        }
    }

    // MARK: - What the structure declares

    /// A GIF's canvas as it declares it: `gif()`'s logical screen set to `width` x `height`.
    static func gif(screen width: Int, _ height: Int, frames: Int = 3) -> [UInt8] {
        let bytes = gif(frames: frames).bytes
        return Array(bytes[..<6]) + [width, height].flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
            + Array(bytes[10...])
    }

    /// `gif(frames: 2)` with the image of frame `index` placed at (10, 20) and `width` x `height`, beyond the
    /// 4 x 4 screen.
    static func gif(frame index: Int, _ width: Int, _ height: Int) -> [UInt8] {
        var bytes = gif(frames: 2).bytes
        // Each image descriptor (0x2C) follows its frame's graphic control extension.
        let control: [UInt8] = [0x21, 0xF9, 4, 4, 5, 0, 0, 0, 0x2C]
        let starts = (0...(bytes.count - control.count)).filter {
            bytes[$0..<($0 + control.count)].elementsEqual(control)
        }
        let at = starts[index] + control.count
        let sides = [10, 20, width, height].flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        bytes.replaceSubrange(at..<(at + 8), with: sides)
        return bytes
    }

    static func bigEndian32(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8(value >> $0 & 0xFF) } }

    /// An APNG's structure (its data is not meant to decode): IHDR of `width` x `height`, an acTL declaring
    /// `declaring` frames (before IDAT, or after it with `lateAnimation`; none when nil), then `controls` frames
    /// (an fcTL each, the first before IDAT, the others before an fdAT), IEND.
    static func apng(
        _ width: Int, _ height: Int, declaring: Int?, controls: Int, lateAnimation: Bool = false
    ) -> [UInt8] {
        let animation = declaring.map { chunk("acTL", bigEndian32($0) + bigEndian32(0)) } ?? []
        func control(_ sequence: Int) -> [UInt8] {
            chunk(
                "fcTL",
                bigEndian32(sequence) + bigEndian32(width) + bigEndian32(height) + [UInt8](repeating: 0, count: 14))
        }
        var bytes = PNGChunks.signature + chunk("IHDR", bigEndian32(width) + bigEndian32(height) + [8, 0, 0, 0, 0])
        if !lateAnimation { bytes += animation }
        if controls > 0 { bytes += control(0) }
        bytes += chunk("IDAT", [0x78, 0x9C, 0x63, 0x60])
        if lateAnimation { bytes += animation }
        for frame in stride(from: 1, to: max(controls, 1) * 2 - 1, by: 2) {
            bytes += control(frame) + chunk("fdAT", bigEndian32(frame + 1) + [0x78, 0x9C, 0x63, 0x60])
        }
        return bytes + chunk("IEND", [])
    }

    @Test(
        """
        a GIF declares its logical screen (grown to its first image's extent) times its images, a PNG its IHDR \
        times an APNG's frames (its acTL's, or the fcTL chunks when more), whatever the pieces; a JPEG nothing
        """,
        arguments: [
            ("GIF, 4 x 4, 3 frames", MediaType.gif, gif().bytes, ImageSize(width: 4, height: 4), 3),
            (
                "GIF, 60000 x 60000 screen, one 4 x 4 frame", .gif, gif(screen: 60000, 60000, frames: 1),
                ImageSize(width: 60000, height: 60000), 1
            ),
            // Its 4 x 4 frames reach below the screen: the first one's extent counts.
            (
                "GIF, 65535 x 2 screen, 2 frames", .gif, gif(screen: 65535, 2, frames: 2),
                ImageSize(width: 65535, height: 4), 2
            ),
            // libnsgif grows its canvas to the first frame's extent, not a later one's.
            (
                "GIF, 4 x 4 screen, first frame 3000 x 2000 at (10, 20)", .gif, gif(frame: 0, 3000, 2000),
                ImageSize(width: 3010, height: 2020), 2
            ),
            (
                "GIF, 4 x 4 screen, second frame 3000 x 2000 at (10, 20)", .gif, gif(frame: 1, 3000, 2000),
                ImageSize(width: 4, height: 4), 2
            ),
            ("PNG", .png, png().bytes, ImageSize(width: 4, height: 4), 1),
            (
                "APNG of 40 frames", .png, apng(2000, 2000, declaring: 40, controls: 2),
                ImageSize(width: 2000, height: 2000), 40
            ),
            (
                "APNG declaring 1 frame, with 3", .png, apng(2000, 2000, declaring: 1, controls: 3),
                ImageSize(width: 2000, height: 2000), 3
            ),
            (
                "APNG declaring 4 billion frames", .png, apng(1, 1, declaring: 0xFFFF_FFFF, controls: 1),
                ImageSize(width: 1, height: 1), 0xFFFF_FFFF
            ),
            // Decoders ignore an acTL after IDAT, and fcTL chunks without one: a still image.
            (
                "PNG with an acTL after IDAT", .png, apng(300, 200, declaring: 40, controls: 3, lateAnimation: true),
                ImageSize(width: 300, height: 200), 1
            ),
            (
                "PNG with fcTL chunks and no acTL", .png, apng(300, 200, declaring: nil, controls: 3),
                ImageSize(width: 300, height: 200), 1
            ),
        ] as [(String, MediaType, [UInt8], ImageSize, Int)])
    func declared(_ name: String, _ type: MediaType, _ bytes: [UInt8], _ canvas: ImageSize, _ frames: Int) {
        let expected = ImageHeader(
            width: canvas.width, height: canvas.height, pages: frames, hasAlpha: false, decoder: nil)
        #expect(Self.verdict(bytes, type) == .whole)
        for piece in 1...bytes.count {
            #expect(Self.walked(bytes, type, piece: piece).declared == expected, "\(name), pieces of \(piece)")
        }
    }

    @Test(
        "nothing is declared before the GIF's first image, or before the PNG's IHDR has ended; a JPEG declares nothing")
    func declaredNothing() {
        let gif = Self.gif().bytes
        #expect(Self.walked(Array(gif.prefix(Self.gif().pictureFrom - 1)), .gif).declared == nil)
        #expect(Self.walked(Array(gif.prefix(Self.gif().pictureFrom)), .gif).declared?.pages == 1)
        #expect(Self.walked(Array(Self.png().bytes.prefix(32)), .png).declared == nil)
        #expect(Self.walked(Array(Self.png().bytes.prefix(33)), .png).declared?.width == 4)
        #expect(Self.walked(Self.jpeg().bytes, .jpeg).declared == nil)
    }

    // MARK: - The corpus

    @Test(
        "the corpus's JPEG, PNG and GIF files: the sound ones whole, the truncated and damaged ones found",
        arguments: [
            ("jpeg-truncated.jpg", Kind.showsPart), ("jpeg-bitflip.jpg", .showsPart),
            ("png-truncated.png", .showsNothing),
            ("png-bad-crc.png", .showsNothing), ("gif-truncated.gif", .showsPart),
            // A broken zlib stream under a recomputed CRC is whole to its structure: the verifying decode's case.
            ("png-bad-zlib.png", .whole), ("png-ztxt-bomb.png", .whole), ("png-trailing-html.png", .whole),
            ("apng-three-frames.png", .whole), ("jpeg-progressive.jpg", .whole), ("jpeg-cmyk.jpg", .whole),
            ("jpeg-orientation-8.jpg", .whole), ("gif-many-frames.gif", .whole), ("gif-polyglot.gif", .whole),
        ])
    func corpus(_ name: String, _ expected: Kind) {
        let type: MediaType = name.hasSuffix(".jpg") ? .jpeg : name.hasSuffix(".png") ? .png : .gif
        let verdict = Self.verdict(fixture("corpus/" + name), type)
        #expect(Kind(verdict) == expected, "\(verdict)")
        #expect(Self.verdict(fixture("corpus/" + name), type, piece: 4093) == verdict)
    }
}
