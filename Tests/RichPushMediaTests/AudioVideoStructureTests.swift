import Foundation
import RichPushCore
import RichPushTestSupport
import Testing

@testable import RichPushMedia

/// The structure walks of MP4 and M4A (`MP4Structure`), WAV, AVI and AIFF (`ChunkStructure`) and MP3
/// (`MP3Structure`), without I/O: files built here byte by byte, whole, cut at every byte, damaged on purpose, fed in
/// pieces of every size; and the real fixtures, whole and cut every few hundred bytes.
@Suite("Audio and video structure: MP4, WAV, AVI, AIFF and MP3 walked to their ends")
struct AudioVideoStructureTests {
    typealias Kind = VerdictKind

    /// A file built here, and the verdict each prefix of it gets.
    struct Built: Sendable, CustomTestStringConvertible {
        var name: String
        var type: MediaType
        var bytes: [UInt8]
        /// The verdict on the first `n` bytes.
        var expected: @Sendable (Int) -> Kind

        var testDescription: String { name }
    }

    // MARK: - Builders

    static func bigEndian32(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8(value >> $0 & 0xFF) } }
    static func littleEndian32(_ value: Int) -> [UInt8] { [0, 8, 16, 24].map { UInt8(value >> $0 & 0xFF) } }
    static func littleEndian16(_ value: Int) -> [UInt8] { [0, 8].map { UInt8(value >> $0 & 0xFF) } }

    /// `count` bytes of a pattern that holds no 0xFF (no MPEG audio sync) and no box or chunk structure.
    static func filler(_ count: Int, _ seed: UInt8 = 0) -> [UInt8] {
        (0..<count).map { UInt8(($0 * 7 + Int(seed)) % 200) }
    }

    /// An ISO BMFF box.
    static func box(_ type: String, _ body: [UInt8]) -> [UInt8] {
        bigEndian32(8 + body.count) + Array(type.utf8) + body
    }

    static let ftyp = box("ftyp", Array("isom".utf8) + [0, 0, 2, 0] + Array("isomiso2mp41".utf8))
    static let moov = box("moov", box("mvhd", filler(100)) + box("trak", box("tkhd", filler(84))) + box("udta", []))

    /// An MP4: ftyp, then its moov before its mdat (`moovFirst`, as `-movflags +faststart` writes) or after it; its
    /// mdat with a 64-bit size (`large`) or running to the end (`toEnd`, size 0).
    static func mp4(moovFirst: Bool, large: Bool = false, toEnd: Bool = false, type: MediaType = .mp4) -> Built {
        let media = filler(300, 3)
        let mdat =
            toEnd
            ? [0, 0, 0, 0] + Array("mdat".utf8) + media
            : large
                ? [0, 0, 0, 1] + Array("mdat".utf8) + [0, 0, 0, 0] + bigEndian32(16 + media.count) + media
                : box("mdat", media)
        let head = ftyp + (moovFirst ? moov : []) + box("free", [])
        let bytes = head + mdat + (moovFirst ? [] : moov)
        // Once the moov came whole, a byte of the mdat's media is enough to play.
        let playable = moovFirst ? head.count + mdat.count - media.count + 1 : bytes.count
        let name =
            "MP4, moov \(moovFirst ? "first" : "last")" + (large ? ", 64-bit mdat" : "")
            + (toEnd ? ", mdat to the end" : "")
        // An mdat running to the end of the file ends wherever the bytes end.
        return Built(name: name, type: type, bytes: bytes) { length in
            length == bytes.count || toEnd && length >= playable
                ? .whole : length >= playable ? .showsPart : .showsNothing
        }
    }

    /// An IFF chunk, with its pad byte when its size is odd.
    static func chunk(_ id: String, _ body: [UInt8], bigEndian: Bool = false) -> [UInt8] {
        Array(id.utf8) + (bigEndian ? bigEndian32(body.count) : littleEndian32(body.count)) + body
            + (body.count % 2 == 1 ? [0] : [])
    }

    /// A RIFF or FORM of `type` holding `chunks`.
    static func form(_ type: String, _ chunks: [UInt8], id: String = "RIFF", bigEndian: Bool = false) -> [UInt8] {
        Array(id.utf8) + (bigEndian ? bigEndian32(4 + chunks.count) : littleEndian32(4 + chunks.count))
            + Array(type.utf8) + chunks
    }

    /// A FORM of `type` holding `chunks`.
    static func aiffForm(_ chunks: [UInt8], type: String = "AIFF") -> [UInt8] {
        form(type, chunks, id: "FORM", bigEndian: true)
    }

    /// A PCM fmt chunk's body: 1 channel at 8 kHz, 8 bits (or `channels` and `rate`).
    static func fmt(channels: Int = 1, rate: Int = 8000) -> [UInt8] {
        littleEndian16(1) + littleEndian16(channels) + littleEndian32(rate) + littleEndian32(rate * channels)
            + littleEndian16(channels) + littleEndian16(8)
    }

    /// A WAV: fmt, a LIST INFO of an odd size, data of an odd size, then a trailing `id3 ` chunk (`tail`), then
    /// `trailing` bytes after the RIFF's end.
    static func wav(tail: Bool = false, trailing: [UInt8] = []) -> Built {
        let head =
            chunk("fmt ", fmt()) + chunk("LIST", Array("INFOISFT".utf8) + littleEndian32(5) + Array("Lavf\0".utf8))
        let data = chunk("data", filler(101, 5))
        let after = tail ? chunk("id3 ", filler(10)) : []
        let bytes = form("WAVE", head + data + after)
        // Playable once more than 8 bytes of the data came; the last pad byte may be missing.
        let playable = 12 + head.count + 8 + 9
        let ends = bytes.count - (tail ? 0 : 1)
        let name = "WAV\(tail ? ", a chunk after its data" : "")\(trailing.isEmpty ? "" : ", bytes after its end")"
        return Built(name: name, type: .wav, bytes: bytes + trailing) { length in
            length >= ends ? .whole : length >= playable ? .showsPart : .showsNothing
        }
    }

    /// An AVI: a LIST hdrl with its avih, a LIST movi with a video chunk, an idx1.
    static func avi() -> Built {
        let hdrl = chunk("LIST", Array("hdrl".utf8) + chunk("avih", filler(56)))
        let movi = chunk("LIST", Array("movi".utf8) + chunk("00dc", filler(20, 9)))
        let bytes = form("AVI ", hdrl + movi + chunk("idx1", filler(16)))
        let playable = 12 + hdrl.count + 8 + 9
        return Built(name: "AVI", type: .avi, bytes: bytes) { length in
            length == bytes.count ? .whole : length >= playable ? .showsPart : .showsNothing
        }
    }

    /// An AIFF's COMM body: `channels`, 80 sample frames, 8 bits, 8 kHz (an 80-bit extended float).
    static func comm(channels: Int = 1) -> [UInt8] {
        [0, UInt8(channels), 0, 0, 0, 80, 0, 8, 0x40, 0x0B, 0xFA] + [UInt8](repeating: 0, count: 7)
    }

    /// An AIFF (or an AIFF-C, with its FVER): COMM then SSND of an odd size, or SSND first (`soundFirst`).
    static func aiff(aifc: Bool = false, soundFirst: Bool = false) -> Built {
        let version = aifc ? chunk("FVER", [0xA2, 0x80, 0x51, 0x40], bigEndian: true) : []
        let format = chunk("COMM", comm() + (aifc ? Array("NONE".utf8) + [0] + [0] : []), bigEndian: true)
        let sound = chunk("SSND", [UInt8](repeating: 0, count: 8) + filler(51, 1), bigEndian: true)
        let chunks = version + (soundFirst ? sound + format : format + sound)
        let bytes = aiffForm(chunks, type: aifc ? "AIFC" : "AIFF")
        // Playable once the COMM came whole and more than 8 bytes of the SSND; the last pad byte may be missing.
        let playable = soundFirst ? bytes.count : 12 + version.count + format.count + 8 + 9
        let ends = bytes.count - (soundFirst ? 0 : 1)
        let name = "AIFF\(aifc ? "-C" : "")\(soundFirst ? ", SSND before COMM" : "")"
        return Built(name: name, type: .aiff, bytes: bytes) { length in
            length >= ends ? .whole : length >= playable ? .showsPart : .showsNothing
        }
    }

    /// An MPEG audio frame: `header`, then a body of the length it gives (no 0xFF in it).
    static func frame(_ header: [UInt8], seed: UInt8 = 0) -> [UInt8] {
        let header32 = header.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return header + filler(MP3Structure.length(header32)! - 4, seed)
    }

    /// Headers: MPEG-1 layer III, 32 kb/s, 32 kHz (144 bytes; 145 padded); MPEG-2 layer III, 8 kb/s, 16 kHz (36);
    /// MPEG-1 layer II, 32 kb/s, 48 kHz (96); MPEG-1 layer I, 32 kb/s, 32 kHz (48); MPEG-2.5 layer III, 8 kb/s,
    /// 8 kHz (72).
    static let layer3: [UInt8] = [0xFF, 0xFB, 0x18, 0xC4]
    static let layer3Padded: [UInt8] = [0xFF, 0xFB, 0x1A, 0xC4]
    static let mpeg2: [UInt8] = [0xFF, 0xF3, 0x18, 0xC4]
    static let layer2: [UInt8] = [0xFF, 0xFD, 0x14, 0xC4]
    static let layer1: [UInt8] = [0xFF, 0xFF, 0x18, 0xC4]
    static let mpeg25: [UInt8] = [0xFF, 0xE3, 0x18, 0xC4]

    /// An ID3v2.4 tag of `body` bytes (with a footer when `footer`).
    static func id3(_ body: Int = 20, footer: Bool = false) -> [UInt8] {
        let size = [21, 14, 7, 0].map { UInt8(body >> $0 & 0x7F) }
        return Array("ID3".utf8) + [4, 0, footer ? 0x10 : 0] + size + filler(body)
            + (footer ? Array("3DI".utf8) + [4, 0, 0x10] + size : [])
    }

    static let id3v1 = Array("TAG".utf8) + filler(125)

    /// An APEv2 tag, header and footer around one item.
    static let ape: [UInt8] = {
        let item = littleEndian32(5) + littleEndian32(0) + Array("Title\0Chime".utf8)
        func field(_ flags: UInt32) -> [UInt8] {
            Array("APETAGEX".utf8) + littleEndian32(2000) + littleEndian32(item.count + 32) + littleEndian32(1)
                + littleEndian32(Int(flags)) + [UInt8](repeating: 0, count: 8)
        }
        return field(0xA000_0000) + item + field(0x8000_0000)
    }()

    /// An MP3: a leading tag (or none), frames of `header` (every third padded for layer III MPEG-1), then tags.
    static func mp3(
        _ name: String, tag: [UInt8] = id3(), header: [UInt8] = layer3, frames: Int = 5, tags: [UInt8] = []
    ) -> Built {
        var bytes = tag
        var ends: [Int] = []
        for index in 0..<frames {
            bytes += frame(header == layer3 && index % 3 == 2 ? layer3Padded : header, seed: UInt8(index))
            ends.append(bytes.count)
        }
        let last = bytes.count
        bytes += tags
        // Nothing until the second frame's header came; then whole where a frame ends (a few bytes of the next header
        // after it are passed over), a part inside one.
        let second = ends[0] + 4
        let frameEnds = ends
        return Built(name: name, type: .mp3, bytes: bytes) { length in
            if length < second { return .showsNothing }
            if length >= last || frameEnds.contains(where: { (0...3).contains(length - $0) }) { return .whole }
            return .showsPart
        }
    }

    /// An MPEG program stream's pack header: MPEG-1's 12 bytes, or MPEG-2's 14 and `stuffing` 0xFF bytes.
    static func pack(mpeg2: Bool, stuffing: Int = 0) -> [UInt8] {
        [0, 0, 1, 0xBA]
            + (mpeg2
                ? [0x44, 0, 4, 0, 4, 1, 1, 0x89, 0xC3, 0xF8 | UInt8(stuffing)]
                    + [UInt8](repeating: 0xFF, count: stuffing)
                : [0x21, 0, 1, 0, 1, 0x80, 0x1B, 0x91])
    }

    /// A system header or packet of stream `code` holding `body`.
    static func packet(_ code: UInt8, _ body: [UInt8]) -> [UInt8] {
        [0, 0, 1, code, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
    }

    /// An MPEG-1 or MPEG-2 program stream: a pack with a system header and a video packet, a pack with an audio
    /// packet and a padding packet, then the end code (`endCode`).
    static func programStream(mpeg2: Bool, endCode: Bool = false) -> Built {
        let first = pack(mpeg2: mpeg2) + packet(0xBB, filler(12)) + packet(0xE0, filler(40, 1))
        var bytes = first + pack(mpeg2: mpeg2, stuffing: mpeg2 ? 3 : 0)
        var ends = [first.count, bytes.count]
        for unit in [packet(0xC0, filler(30, 2)), packet(0xBE, [UInt8](repeating: 0xFF, count: 20))] {
            bytes += unit
            ends.append(bytes.count)
        }
        let last = bytes.count
        if endCode { bytes += [0, 0, 1, 0xB9] }
        let boundaries = ends
        let total = bytes.count
        // Nothing until the video packet came whole; then whole where a pack or packet ends (one or two zero bytes
        // after it are passed over, as before a start code), a part inside one.
        return Built(
            name: "MPEG-\(mpeg2 ? 2 : 1) program stream\(endCode ? ", end code" : "")", type: mpeg2 ? .mpeg2 : .mpeg,
            bytes: bytes
        ) { length in
            if length < first.count { return .showsNothing }
            if length == total || boundaries.contains(where: { (0...2).contains(length - $0) }) {
                return .whole
            }
            return length >= last && !endCode ? .whole : .showsPart
        }
    }

    static let built: [Built] = [
        mp4(moovFirst: true), mp4(moovFirst: false), mp4(moovFirst: true, large: true),
        mp4(moovFirst: true, toEnd: true), mp4(moovFirst: true, type: .m4a),
        wav(), wav(tail: true), wav(trailing: Array("<html></html>".utf8)), avi(), aiff(), aiff(aifc: true),
        aiff(soundFirst: true),
        mp3("MP3, ID3v2, MPEG-1 layer III, ID3v1", tags: id3v1),
        mp3("MP3, bare, MPEG-2 layer III", tag: [], header: mpeg2, frames: 8),
        mp3(
            "MP3, ID3v2 with a footer, layer II, APE and ID3v1", tag: id3(footer: true), header: layer2,
            tags: ape + id3v1),
        mp3("MP3, layer I", header: layer1, frames: 6), mp3("MP3, MPEG-2.5", tag: [], header: mpeg25),
        programStream(mpeg2: false), programStream(mpeg2: true), programStream(mpeg2: true, endCode: true),
    ]

    // MARK: - Whole, cut, split

    @Test("a whole file is whole", arguments: built)
    func whole(_ file: Built) {
        #expect(StructureFeeding.verdict(file.bytes, file.type) == .whole)
    }

    @Test(
        "cut at every byte: nothing before what a player needs came, part after it, whole at its end", arguments: built)
    func cutEverywhere(_ file: Built) {
        for length in 1..<file.bytes.count {
            let verdict = StructureFeeding.verdict(Array(file.bytes.prefix(length)), file.type)
            #expect(Kind(verdict) == file.expected(length), "cut at \(length) of \(file.bytes.count): \(verdict)")
        }
    }

    @Test("fed in pieces of every size, and cut short byte by byte, the verdict is the same", arguments: built)
    func pieces(_ file: Built) {
        for piece in 1...file.bytes.count {
            #expect(StructureFeeding.verdict(file.bytes, file.type, piece: piece) == .whole, "pieces of \(piece)")
        }
        for length in stride(from: 1, to: file.bytes.count, by: 7) {
            let cut = Array(file.bytes.prefix(length))
            #expect(StructureFeeding.verdict(cut, file.type, piece: 1) == StructureFeeding.verdict(cut, file.type))
        }
    }

    // MARK: - Faults

    struct Fault: Sendable, CustomTestStringConvertible {
        var name: String
        var type: MediaType
        var bytes: [UInt8]
        var expected: Kind
        /// Words the detail must hold (none for a whole file).
        var detail: String = ""

        var testDescription: String { name }
    }

    static let html = Array(
        ("<!DOCTYPE html>\n<html><head><title>Not found</title></head><body>"
            + String(repeating: "<p>The page you asked for is not here.</p>", count: 70) + "</body></html>\n").utf8)

    /// `count` random bytes, the same on every run.
    static func garbage(_ count: Int, seed: UInt64 = 7) -> [UInt8] {
        var generator = SplitMix64(seed: seed)
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    static let mp4Faults: [Fault] = {
        let media = box("mdat", filler(300, 3))
        let whole = ftyp + moov + media
        return [
            Fault(
                name: "MP4: an ftyp, then HTML (the probe)", type: .mp4, bytes: ftyp + html, expected: .showsNothing,
                detail: "before a whole moov box"),
            Fault(name: "MP4: an ftyp, then garbage", type: .mp4, bytes: ftyp + garbage(3000), expected: .showsNothing),
            Fault(
                name: "MP4: an ftyp, an empty moov, then HTML", type: .mp4, bytes: ftyp + box("moov", []) + html,
                expected: .showsNothing, detail: "holds no mvhd box"),
            Fault(
                name: "MP4: no moov", type: .mp4, bytes: ftyp + media, expected: .showsNothing, detail: "no moov box"),
            Fault(
                name: "MP4: a moov without a trak", type: .mp4,
                bytes: ftyp + box("moov", box("mvhd", filler(100))) + media, expected: .showsNothing,
                detail: "holds no trak box"),
            Fault(
                name: "MP4: a moov child past the moov's end", type: .mp4,
                bytes: ftyp + box("moov", box("mvhd", filler(100)) + bigEndian32(200) + Array("trak".utf8) + filler(20))
                    + media,
                expected: .showsNothing,
                detail: "the trak box at byte 144 in its moov box declares 200 bytes, past the moov's end at byte 172"),
            Fault(
                name: "MP4: a whole moov, no mdat", type: .mp4, bytes: ftyp + moov + box("free", filler(10)),
                expected: .showsNothing, detail: "no media data"),
            Fault(
                name: "MP4: a box of 4 bytes before the moov", type: .mp4,
                bytes: ftyp + bigEndian32(4) + Array("free".utf8) + moov + media, expected: .showsNothing,
                detail: "fewer than its 8-byte header"),
            Fault(
                name: "MP4: a 64-bit size of 12", type: .mp4,
                bytes: ftyp + [0, 0, 0, 1] + Array("free".utf8) + [0, 0, 0, 0] + bigEndian32(12) + moov + media,
                expected: .showsNothing, detail: "fewer than its 16-byte header"),
            Fault(
                name: "MP4: a uuid box of 20 bytes", type: .mp4,
                bytes: ftyp + box("uuid", filler(12)) + moov + media, expected: .showsNothing,
                detail: "fewer than its 24-byte header"),
            Fault(
                name: "MP4: a box of 4 bytes after the moov and the mdat", type: .mp4,
                bytes: whole + bigEndian32(4) + Array("free".utf8), expected: .showsPart,
                detail: "fewer than its 8-byte header"),
            Fault(
                name: "MP4: HTML after a whole file", type: .mp4, bytes: whole + html, expected: .showsPart,
                detail: "CTYP box at byte \(whole.count)"),
            Fault(
                name: "MP4: a type that is not printable after a whole file", type: .mp4,
                bytes: whole + bigEndian32(8) + [0, 1, 2, 3], expected: .showsPart, detail: "there is no box"),
            Fault(
                name: "MP4: a moov of size 0, last", type: .mp4,
                bytes: ftyp + media + [0, 0, 0, 0] + moov.dropFirst(4),
                expected: .whole),
            Fault(
                name: "MP4: a second moov, empty, is passed over", type: .mp4, bytes: whole + box("moov", []),
                expected: .whole),
        ]
    }()

    static let chunkFaults: [Fault] = {
        let info = chunk("LIST", Array("INFOISFT".utf8) + littleEndian32(5) + Array("Lavf\0".utf8))
        let data = chunk("data", filler(101, 5))
        let format = chunk("fmt ", fmt())
        let silentCOMM = chunk("COMM", comm(channels: 0), bigEndian: true)
        let streamed: [UInt8] =
            Array("RIFF".utf8) + [0xFF, 0xFF, 0xFF, 0xFF] + Array("WAVE".utf8) + format + Array("data".utf8)
            + [0xFF, 0xFF, 0xFF, 0xFF] + filler(200)
        let unsized: [UInt8] =
            Array("RIFF".utf8) + littleEndian32(0) + Array("WAVE".utf8) + format + Array("data".utf8)
            + littleEndian32(0) + filler(200)
        let oversized: [UInt8] = Array("RIFF".utf8) + littleEndian32(9000) + Array("WAVE".utf8) + format + data
        let bigFormat: [UInt8] = [0, 1, 0, 2] + bigEndian32(8000) + bigEndian32(32000) + [0, 4, 0, 16]
        let rifx = form(
            "WAVE", chunk("fmt ", bigFormat, bigEndian: true) + chunk("data", filler(100), bigEndian: true),
            id: "RIFX", bigEndian: true)
        let none: [UInt8] = [0, 1, 2, 3] + littleEndian32(4) + [0, 0, 0, 0]
        let sizes: [UInt8] =
            [0, 0, 0, 0, 0, 0, 0, 0] + littleEndian32(200) + [0, 0, 0, 0] + littleEndian32(100) + [0, 0, 0, 0]
        let rf64: [UInt8] =
            Array("RF64".utf8) + [0xFF, 0xFF, 0xFF, 0xFF] + Array("WAVE".utf8)
            + chunk("ds64", sizes + littleEndian32(0))
            + format + Array("data".utf8) + [0xFF, 0xFF, 0xFF, 0xFF] + filler(200)
        var faults: [Fault] = [
            Fault(
                name: "WAV: a RIFF header, then HTML (the probe)", type: .wav, bytes: Array(form("WAVE", html)),
                expected: .showsNothing, detail: "before a whole fmt chunk"),
            Fault(
                name: "WAV: a RIFF header, a fmt chunk, then HTML", type: .wav,
                bytes: form("WAVE", chunk("fmt ", fmt()) + html), expected: .showsNothing,
                detail: "before any media data"),
            Fault(name: "WAV: garbage", type: .wav, bytes: garbage(3000), expected: .showsNothing, detail: "not RIFF"),
            Fault(
                name: "WAV: another form type", type: .wav, bytes: form("WAVX", chunk("fmt ", fmt()) + data),
                expected: .showsNothing, detail: "its form type is 'WAVX'"),
            Fault(
                name: "WAV: data and no fmt", type: .wav, bytes: form("WAVE", info + data), expected: .showsNothing,
                detail: "comes before its fmt chunk"),
            Fault(
                name: "WAV: fmt and no data", type: .wav, bytes: form("WAVE", chunk("fmt ", fmt()) + info),
                expected: .showsNothing, detail: "has no data chunk"),
            Fault(
                name: "WAV: fmt declaring no channels", type: .wav,
                bytes: form("WAVE", chunk("fmt ", fmt(channels: 0)) + data), expected: .showsNothing,
                detail: "declares no channels"),
            Fault(
                name: "WAV: fmt declaring a sample rate of 0", type: .wav,
                bytes: form("WAVE", chunk("fmt ", fmt(rate: 0)) + data), expected: .showsNothing,
                detail: "a sample rate of 0"),
            Fault(
                name: "WAV: fmt of 12 bytes", type: .wav,
                bytes: form("WAVE", chunk("fmt ", Array(fmt().prefix(12))) + data), expected: .showsNothing,
                detail: "fewer than 14"),
            Fault(
                name: "WAV: an empty data chunk", type: .wav,
                bytes: form("WAVE", chunk("fmt ", fmt()) + chunk("data", [])),
                expected: .showsNothing, detail: "holds no media data"),
            Fault(
                name: "WAV: a chunk that is none after the data", type: .wav,
                bytes: form("WAVE", format + data + none),
                expected: .showsPart, detail: "there is no chunk at byte"),
            Fault(
                name: "WAV: a RIFF size larger than the file", type: .wav, bytes: oversized, expected: .showsPart,
                detail: "its header declares 9008 bytes"),
            Fault(name: "WAV: streamed, every size 0xFFFFFFFF", type: .wav, bytes: streamed, expected: .whole),
            Fault(
                name: "WAV: a data chunk of size 0, the samples after it", type: .wav, bytes: unsized,
                expected: .whole),
            Fault(name: "WAV: big-endian (RIFX)", type: .wav, bytes: rifx, expected: .whole),
            Fault(name: "WAV: RF64, its sizes in a ds64 chunk", type: .wav, bytes: rf64, expected: .whole),
        ]
        faults += [
            Fault(
                name: "AVI: a RIFF header, then HTML", type: .avi, bytes: form("AVI ", html), expected: .showsNothing,
                detail: "before a whole hdrl list"),
            Fault(
                name: "AVI: movi and no hdrl", type: .avi,
                bytes: form("AVI ", chunk("LIST", Array("movi".utf8) + chunk("00dc", filler(20)))),
                expected: .showsNothing, detail: "its movi list at byte 12 comes before its hdrl list"),
            Fault(
                name: "AVI: hdrl and no movi", type: .avi,
                bytes: form("AVI ", chunk("LIST", Array("hdrl".utf8) + chunk("avih", filler(56))) + chunk("idx1", [])),
                expected: .showsNothing, detail: "has no movi list"),
        ]
        faults += [
            Fault(
                name: "AIFF: a FORM header, then HTML", type: .aiff, bytes: aiffForm(html),
                expected: .showsNothing, detail: "before a whole COMM chunk"),
            Fault(
                name: "AIFF: SSND and no COMM", type: .aiff,
                bytes: aiffForm(chunk("SSND", filler(40), bigEndian: true)),
                expected: .showsNothing, detail: "has no COMM chunk"),
            Fault(
                name: "AIFF: COMM and no SSND", type: .aiff,
                bytes: aiffForm(chunk("COMM", comm(), bigEndian: true)),
                expected: .showsNothing, detail: "has no SSND chunk"),
            Fault(
                name: "AIFF: COMM declaring no channels", type: .aiff,
                bytes: aiffForm(silentCOMM + chunk("SSND", filler(40), bigEndian: true)),
                expected: .showsNothing, detail: "declares no channels"),
            Fault(
                name: "AIFF: a RIFF", type: .aiff, bytes: form("WAVE", chunk("fmt ", fmt()) + data),
                expected: .showsNothing, detail: "starts with 'RIFF', not FORM"),
        ]
        return faults
    }()

    static let mp3Faults: [Fault] = {
        let frames = (0..<6).flatMap { frame(layer3, seed: UInt8($0)) }
        func header(_ bytes: [UInt8]) -> [UInt8] { (0..<5).flatMap { _ in bytes + filler(140) } }
        let faults: [Fault] = [
            Fault(
                name: "MP3: a frame header, then HTML (the probe)", type: .mp3, bytes: [0xFF, 0xFB, 0x90, 0x64] + html,
                expected: .showsNothing,
                detail: "no two MPEG audio frames follow each other in its \(4 + html.count) bytes"),
            Fault(
                name: "MP3: an ID3v2 tag, a frame header, then HTML", type: .mp3,
                bytes: id3() + [0xFF, 0xFB, 0x90, 0x64] + html, expected: .showsNothing,
                detail: "after its ID3v2 tag"),
            Fault(name: "MP3: garbage", type: .mp3, bytes: garbage(5000), expected: .showsNothing),
            Fault(
                name: "MP3: two frames, then more HTML than frames", type: .mp3,
                bytes: id3() + Array(frames.prefix(289)) + html, expected: .showsNothing,
                // The second frame is followed by HTML: only the first is counted.
                detail: "only 144 of its \(289 + html.count) bytes after its ID3v2 tag are MPEG audio frames"),
            Fault(
                name: "MP3: junk between its frames", type: .mp3,
                bytes: id3() + Array(frames.prefix(432)) + Array(html.prefix(100)) + Array(frames.dropFirst(432)),
                expected: .showsPart, detail: "100 bytes between its frames, from byte 462"),
            Fault(
                name: "MP3: junk holding 0xFF bytes between its frames", type: .mp3,
                bytes: Array(frames.prefix(432)) + [0xFF, 0xFF, 0xFB, 0x18, 0xFF, 0x01, 0xFF] + garbage(90)
                    + Array(frames.dropFirst(432)),
                expected: .showsPart, detail: "bytes between its frames, from byte 432"),
            Fault(
                name: "MP3: junk, then its first frame past 64 KiB", type: .mp3,
                bytes: [UInt8](repeating: 0, count: 66_000) + (0..<600).flatMap { frame(layer3, seed: UInt8($0 % 7)) },
                expected: .showsNothing, detail: "its first MPEG audio frame starts at byte 66000"),
            Fault(
                name: "MP3: junk before its first frame, within 64 KiB", type: .mp3,
                bytes: id3() + [UInt8](repeating: 0, count: 300) + frames, expected: .whole),
            Fault(
                name: "MP3: frames whose sample rates differ", type: .mp3,
                bytes: (0..<6).flatMap { frame($0 % 2 == 0 ? layer3 : mpeg2) }, expected: .showsNothing,
                detail: "no two MPEG audio frames follow each other"),
            Fault(
                name: "MP3: an ID3v2 tag larger than the file", type: .mp3,
                bytes: Array(id3(4000).prefix(3000)) + frames,
                expected: .showsNothing, detail: "in its ID3v2 tag"),
            Fault(
                name: "MP3: an ID3v2 tag and nothing after", type: .mp3, bytes: id3(), expected: .showsNothing,
                detail: "no audio after its ID3v2 tag"),
            Fault(
                name: "MP3: an ID3v2 tag between its frames", type: .mp3,
                bytes: Array(frames.prefix(432)) + id3() + Array(frames.dropFirst(432)), expected: .whole),
            Fault(
                name: "MP3: an ID3v1 tag between its frames (two files joined)", type: .mp3,
                bytes: Array(frames.prefix(432)) + id3v1 + Array(frames.dropFirst(432)), expected: .whole),
            Fault(
                name: "MP3: an APE tag between its frames", type: .mp3,
                bytes: Array(frames.prefix(432)) + ape + Array(frames.dropFirst(432)), expected: .whole),
            Fault(
                name: "MP3: junk ending in 0xFF right before a frame", type: .mp3,
                bytes: Array(frames.prefix(432)) + Array(html.prefix(100)) + [0xFF] + Array(frames.dropFirst(432)),
                expected: .showsPart, detail: "101 bytes between its frames, from byte 432"),
            Fault(
                name: "MP3: cut short in its ID3v2 tag's footer", type: .mp3,
                bytes: Array(id3(footer: true).dropLast(4)), expected: .showsNothing, detail: "in its ID3v2 tag"),
            Fault(
                name: "MP3: a one-frame stream", type: .mp3, bytes: id3() + frame(layer3), expected: .showsNothing,
                detail: "no two"),
        ]
        // Headers with a reserved value, or free format: no frame, however many come.
        let invalid: [(String, [UInt8])] = [
            ("reserved version", [0xFF, 0xEB, 0x18, 0xC4]), ("reserved layer", [0xFF, 0xF9, 0x18, 0xC4]),
            ("bitrate index 15", [0xFF, 0xFB, 0xF8, 0xC4]), ("reserved sample rate", [0xFF, 0xFB, 0x1C, 0xC4]),
            ("free format", [0xFF, 0xFB, 0x08, 0xC4]),
        ]
        return faults
            + invalid.map { name, bytes in
                Fault(
                    name: "MP3: \(name)", type: .mp3, bytes: header(bytes), expected: .showsNothing,
                    detail: "no two MPEG audio frames follow each other")
            }
    }()

    static let programStreamFaults: [Fault] = {
        let head = pack(mpeg2: true) + packet(0xBB, filler(12))
        let video = packet(0xE0, filler(40, 1))
        let whole = head + video + pack(mpeg2: true) + packet(0xC0, filler(30, 2))
        let elementary: [UInt8] = [0, 0, 1, 0xB3, 0x0A, 0x00, 0x78, 0x13, 0xFF, 0xFF, 0xE0, 0x18] + html
        let unknown: [UInt8] = [0, 0, 1, 0xB3] + filler(8)
        let neither: [UInt8] = [0, 0, 1, 0xBA, 0x84] + filler(11)
        return [
            Fault(
                name: "MPEG: a pack header, then HTML", type: .mpeg2, bytes: pack(mpeg2: true) + html,
                expected: .showsNothing, detail: "there is no start code at byte 14, before any whole audio or video"),
            Fault(name: "MPEG: garbage", type: .mpeg, bytes: garbage(3000), expected: .showsNothing),
            Fault(
                name: "MPEG: a packet first", type: .mpeg2, bytes: video + whole, expected: .showsNothing,
                detail: "it does not start with a pack header"),
            Fault(
                name: "MPEG: packs and no audio or video", type: .mpeg2,
                bytes: head + pack(mpeg2: true) + packet(0xBE, filler(10)), expected: .showsNothing,
                detail: "no audio or video packet"),
            Fault(
                name: "MPEG: an elementary stream's code between packets", type: .mpeg2, bytes: whole + unknown,
                expected: .showsPart, detail: "the start code 00 00 01 B3 at byte \(whole.count) starts no pack"),
            Fault(
                name: "MPEG: a pack header of neither version", type: .mpeg, bytes: neither + video,
                expected: .showsNothing, detail: "neither MPEG-1's nor MPEG-2's"),
            Fault(name: "MPEG: HTML after a whole stream", type: .mpeg2, bytes: whole + html, expected: .showsPart),
            Fault(
                name: "MPEG: zero bytes between packets and at the end", type: .mpeg2,
                bytes: head + video + [0, 0, 0, 0] + pack(mpeg2: true) + [0, 0, 0], expected: .whole),
            Fault(
                name: "MPEG: bytes after the end code", type: .mpeg2, bytes: whole + [0, 0, 1, 0xB9] + html,
                expected: .whole),
            Fault(
                name: "MPEG: an elementary video stream is not walked", type: .mpeg, bytes: elementary,
                expected: .whole),
        ]
    }()

    @Test(
        "a damaged file: refused where a player plays nothing, else played in part; the detail says where",
        arguments: mp4Faults + chunkFaults + mp3Faults + programStreamFaults)
    func fault(_ fault: Fault) {
        let verdict = StructureFeeding.verdict(fault.bytes, fault.type)
        #expect(Kind(verdict) == fault.expected, "\(verdict)")
        switch verdict {
        case .whole: break
        case .showsPart(let detail), .showsNothing(let detail), .unbounded(let detail):
            #expect(fault.detail.isEmpty || detail.contains(fault.detail), "\(detail)")
        }
        #expect(StructureFeeding.verdict(fault.bytes, fault.type, piece: 1) == verdict, "fed byte by byte")
        #expect(StructureFeeding.verdict(fault.bytes, fault.type, piece: 4093) == verdict, "fed in pieces of 4093")
    }

    @Test("frame lengths from the header: layers I to III, MPEG-1, 2 and 2.5, padded; none for a reserved value")
    func frameLengths() {
        let lengths: [([UInt8], Int?)] = [
            (Self.layer3, 144), (Self.layer3Padded, 145), (Self.mpeg2, 36), (Self.layer2, 96), (Self.layer1, 48),
            (Self.mpeg25, 72),
            // 128 kb/s at 44.1 kHz, padded: 418; layer I padded adds a 4-byte slot; 320 kb/s at 48 kHz: 960.
            ([0xFF, 0xFB, 0x92, 0x64], 418), ([0xFF, 0xFF, 0x1A, 0xC4], 52), ([0xFF, 0xFB, 0xE4, 0x64], 960),
            ([0xFF, 0xFB, 0x08, 0xC4], nil), ([0xFF, 0xFB, 0xF8, 0xC4], nil), ([0xFF, 0xEB, 0x18, 0xC4], nil),
            ([0xFF, 0xF9, 0x18, 0xC4], nil), ([0xFF, 0xFB, 0x1C, 0xC4], nil), ([0xFF, 0x1B, 0x18, 0xC4], nil),
        ]
        for (header, length) in lengths {
            #expect(MP3Structure.length(header.reduce(0) { $0 << 8 | UInt32($1) }) == length, "\(header)")
        }
    }

    // MARK: - Real files

    @Test(
        """
        the fixtures are whole, in pieces too; cut every 97 bytes, each is played in part once what a player needs \
        came, and nothing before
        """,
        arguments: [
            // The first length from which a cut plays in part (nil: none, its moov comes last), and the length of
            // its header and format part.
            ("chime.mp3", MediaType.mp3, 45 + 182 + 4 as Int?), ("chime-bare.mp3", .mp3, 104 + 4),
            ("chime.wav", .wav, 70 + 8 + 9), ("chime.aiff", .aiff, 38 + 8 + 9), ("clip.avi", .avi, 5742 + 8 + 9),
            ("chime.m4a", .m4a, nil), ("clip.mp4", .mp4, nil),
            // Their first video packet ends at 2048, with the first sector.
            ("clip-mpeg1.mpg", .mpeg, 2048), ("clip-mpeg2.mpg", .mpeg2, 2048),
        ] as [(String, MediaType, Int?)])
    func fixtures(_ name: String, _ type: MediaType, _ playable: Int?) {
        let bytes = fixture(name)
        #expect(StructureFeeding.verdict(bytes, type) == .whole)
        #expect(StructureFeeding.verdict(bytes, type, piece: 4093) == .whole)
        #expect(StructureFeeding.verdict(bytes, type, piece: 1) == .whole)
        for length in stride(from: 1, to: bytes.count, by: 97) {
            let verdict = StructureFeeding.verdict(Array(bytes.prefix(length)), type)
            if let playable, length >= playable {
                // An MP3 or MPEG stream cut where a frame or packet ends is whole: nothing tells it from one that ends
                // there.
                #expect(
                    Kind(verdict) == .showsPart || [.mp3, .mpeg, .mpeg2].contains(type) && verdict == .whole,
                    "cut at \(length): \(verdict)")
            } else {
                #expect(Kind(verdict) == .showsNothing, "cut at \(length): \(verdict)")
            }
        }
    }

    @Test("what encoders write is whole (the corpus's sound files), in pieces too")
    func encoders() throws {
        let directory = FixtureDirectory.root + "/media/av-corpus"
        let types: [String: MediaType] = [
            "mp3": .mp3, "wav": .wav, "aiff": .aiff, "aifc": .aiff, "m4a": .m4a,
            "mp4": .mp4, "avi": .avi, "mpg": .mpeg,
        ]
        let sound = [
            "mp3-lame-vbr.mp3", "mp3-lame-id3v1-id3v2.mp3", "mp3-layer2.mp3", "mp3-ape-tag.mp3",
            "wav-streamed.wav", "wav-odd-size.wav", "aiff-sox.aiff", "aiff-sox.aifc", "m4a-faststart.m4a",
            "mp4-faststart.mp4", "mp4-fragmented.mp4", "avi-streamed.avi", "mpeg1-ffmpeg.mpg", "mpeg2-ffmpeg-dvd.mpg",
        ]
        for name in sound {
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
            let type = try #require(types[(name as NSString).pathExtension])
            #expect(StructureFeeding.verdict(bytes, type) == .whole, "\(name)")
            #expect(StructureFeeding.verdict(bytes, type, piece: 1) == .whole, "\(name), byte by byte")
        }
    }

    @Test("what explain judges by, the first 4 KB, declares nothing for audio and video, however cut")
    func headDeclaresNothing() {
        for (name, type) in [("clip.mp4", MediaType.mp4), ("chime.wav", .wav), ("chime.mp3", .mp3)] {
            #expect(MediaStructure.declared(byHead: Array(fixture(name).prefix(4096)), type: type) == nil)
        }
    }
}
