/// A PNG's structure (PNG spec, 3rd ed., section 5), walked as its bytes come: the signature; then each chunk's
/// length and type, its data skipped by its length, its CRC; IHDR first (13 bytes), an IDAT before IEND; through
/// to IEND. Bytes after IEND are not looked at: decoders stop there.
///
/// The CRC of every critical chunk (IHDR, PLTE, IDAT, IEND) is checked, and no other: libpng fails on a critical
/// chunk's CRC error and only warns about an ancillary one, dropping the chunk (its `PNG_CRC_DEFAULT`), so an
/// ancillary chunk's CRC does not change what a phone shows. Any fault is one a phone shows nothing of: WebKit's
/// `PNGImageDecoder` fails the image on any libpng error, and when the data ends before the image does.
struct PNGStructure: StructureWalk {
    private enum State {
        /// How many bytes of the signature have come.
        case signature(Int)
        /// How many bytes of a chunk's length and type have come (into `field`).
        case header(Int)
        /// The bytes of a chunk's data left.
        case data(left: Int)
        /// How many bytes of a chunk's CRC have come (into `field`).
        case crc(Int)
        /// IEND came, with its CRC.
        case end
        case broken(String)
    }

    private var state = State.signature(0)
    var offset = 0
    /// The bytes of the field being read, big-endian.
    private var field: UInt64 = 0
    /// The current chunk: its type (four ASCII letters, big-endian), length, first byte, and CRC so far (of its
    /// type and the data read) when it is checked.
    private var type: UInt32 = 0
    private var length = 0
    private var start = 0
    private var crc: UInt32 = 0
    private var checked = false
    private var chunks = 0
    private var sawIDAT = false
    /// The first 8 data bytes of the current chunk when it is IHDR or acTL, big-endian, as far as they have come.
    private var leading: UInt64 = 0
    /// IHDR's width and height; an acTL's frame count (before the first IDAT: decoders ignore one after), and how
    /// many fcTL chunks came.
    private var width = 0
    private var height = 0
    private var declaredFrames: Int?
    private var frameControls = 0

    private static let IHDR: UInt32 = 0x4948_4452
    private static let IDAT: UInt32 = 0x4944_4154
    private static let IEND: UInt32 = 0x4945_4E44
    private static let acTL: UInt32 = 0x6163_544C
    private static let fcTL: UInt32 = 0x6663_544C

    mutating func step(_ bytes: UnsafeRawBufferPointer, _ index: inout Int) -> Bool {
        let count = bytes.count
        switch state {
        case .signature(let seen):
            guard bytes[index] == PNGChunks.signature[seen] else {
                state = .broken("the PNG signature is missing")
                return false
            }
            index += 1
            state = seen == 7 ? .header(0) : .signature(seen + 1)
        case .header(let seen):
            field = field << 8 | UInt64(bytes[index])
            index += 1
            guard seen == 7 else {
                state = .header(seen + 1)
                return true
            }
            start = offset + index - 8
            if let fault = begin(length: Int(field >> 32), type: UInt32(truncatingIfNeeded: field)) {
                state = .broken(fault)
                return false
            }
        case .data(let left):
            let taken = min(left, count - index)
            if checked { crc = CRC32.update(crc, UnsafeRawBufferPointer(rebasing: bytes[index..<(index + taken)])) }
            if type == Self.IHDR || type == Self.acTL {
                let read = length - left
                for byte in bytes[index..<(index + min(taken, max(0, 8 - read)))] {
                    leading = leading << 8 | UInt64(byte)
                }
                if taken == left, length >= 8 { ended() }
            }
            index += taken
            state = taken < left ? .data(left: left - taken) : .crc(0)
        case .crc(let seen):
            field = field << 8 | UInt64(bytes[index])
            index += 1
            guard seen == 3 else {
                state = .crc(seen + 1)
                return true
            }
            if checked, UInt32(truncatingIfNeeded: field) != crc {
                state = .broken("its \(name) chunk at byte \(start) fails its CRC")
                return false
            }
            chunks += 1
            state = type == Self.IEND ? .end : .header(0)
        case .end, .broken:
            return false
        }
        return true
    }

    /// Starts a chunk of `length` bytes of `type`: nil, or what is wrong with it.
    private mutating func begin(length: Int, type: UInt32) -> String? {
        self.type = type
        self.length = length
        // Each type byte is an ASCII letter (PNG spec 5.4).
        for shift in stride(from: 24, through: 0, by: -8) {
            let letter = UInt8(truncatingIfNeeded: type >> UInt32(shift)) & ~0x20
            guard (0x41...0x5A).contains(letter) else { return "it has no valid chunk at byte \(start)" }
        }
        guard length <= 0x7FFF_FFFF else {
            return
                "its \(name) chunk at byte \(start) declares \(length) bytes, more than a PNG chunk may hold (2^31 - 1)"
        }
        if chunks == 0, type != Self.IHDR || length != 13 {
            return type == Self.IHDR ? "its IHDR chunk holds \(length) bytes, not 13" : "it does not start with IHDR"
        }
        if type == Self.IDAT { sawIDAT = true }
        if type == Self.fcTL { frameControls += 1 }
        leading = 0
        if type == Self.IEND, !sawIDAT { return "it has no IDAT chunk before IEND" }
        // A critical chunk's type starts with an upper-case letter (bit 5 clear).
        checked = type & 0x2000_0000 == 0
        if checked {
            var bigEndian = type.bigEndian
            crc = withUnsafeBytes(of: &bigEndian) { CRC32.update(0, $0) }
        }
        state = length == 0 ? .crc(0) : .data(left: length)
        return nil
    }

    /// Takes what an IHDR or acTL chunk, read to its end, declares.
    private mutating func ended() {
        if type == Self.IHDR {
            (width, height) = (Int(leading >> 32), Int(leading & 0xFFFF_FFFF))
        } else if !sawIDAT {
            declaredFrames = max(declaredFrames ?? 0, Int(leading >> 32))
        }
    }

    /// IHDR's canvas, times the frames of an APNG (an acTL before the first IDAT): the frames its acTL declares, or
    /// the fcTL chunks that came when there are more (a decoder decodes each into a canvas of IHDR's size; an
    /// fcTL's frame lies within it). Nil before IHDR has come. libvips's `pngload` reads the first frame alone, and
    /// its header says 1 page: 40 frames of 2000 x 2000 (160 megapixels) were attached as a still.
    var declared: ImageHeader? {
        guard chunks > 0 else { return nil }
        let frames = declaredFrames.map { max($0, frameControls, 1) } ?? 1
        return ImageHeader(width: width, height: height, pages: frames, hasAlpha: false, decoder: nil)
    }

    /// The current chunk's type, as text.
    private var name: String { FourCharacterCode.text(type) }

    var verdict: MediaStructure.Verdict {
        switch state {
        case .end: return .whole
        case .broken(let fault): return .showsNothing("the PNG is damaged: \(fault)")
        case .signature: return .showsNothing("the PNG is cut short at byte \(offset), in its signature")
        case .header: return .showsNothing("the PNG is cut short at byte \(offset), between chunks: no IEND chunk")
        case .data, .crc:
            return .showsNothing(
                "the PNG is cut short at byte \(offset), in its \(name) chunk at byte \(start) (of \(length) bytes): "
                    + "no IEND chunk"
            )
        }
    }
}
