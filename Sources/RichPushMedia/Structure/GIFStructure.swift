/// A GIF's structure (GIF89a specification), walked as its bytes come: the header (GIF87a or GIF89a), the logical
/// screen descriptor, the global colour table; then blocks, each an extension (0x21, a label, sub-blocks) or an
/// image (0x2C, its descriptor, local colour table, LZW code size and data sub-blocks); through to the trailer
/// (0x3B). Bytes after the trailer are not looked at: decoders stop there.
///
/// A phone shows the frames (and the rows of a frame) that came before a fault: WebKit's `GIFImageReader` takes a
/// byte that starts no block for the end of the file, "so the GIF will display", and shows a frame cut short as
/// far as it goes. So a fault after the first image's data began is shown in part; one before it, or a trailer
/// with no image before it, shows nothing.
struct GIFStructure: StructureWalk {
    private enum State {
        /// How many of the 13 bytes of the header and logical screen descriptor have come.
        case header(Int)
        /// A colour table: the bytes left, then the next block (false) or an image's LZW code size (true).
        case table(left: Int, image: Bool)
        /// The byte that starts the next block.
        case introducer
        /// An extension's label.
        case label
        /// How many of the 9 bytes of an image descriptor (after 0x2C) have come.
        case descriptor(Int)
        /// An image's LZW minimum code size.
        case codeSize
        /// A sub-block's size byte (0 ends the block).
        case size
        /// The bytes of a sub-block left.
        case subBlock(left: Int)
        /// The trailer came.
        case end
        case broken(MediaStructure.Verdict)
    }

    private var state = State.header(0)
    var offset = 0
    /// Images whose data began, and whether the bytes are inside the last one's.
    private var frames = 0
    private var inImage = false
    /// The logical screen descriptor's packed byte (byte 10 of the file).
    private var screenPacked: UInt8 = 0
    /// The logical screen's width and height (bytes 6 to 9 of the file, little-endian), as far as they have come.
    private var screenWidth = 0
    private var screenHeight = 0
    /// The first image descriptor's left, top, width and height (2 bytes each, little-endian), as far as they have
    /// come.
    private var firstImage: UInt64 = 0

    private static let signature = Array("GIF8".utf8)

    mutating func step(_ bytes: UnsafeRawBufferPointer, _ index: inout Int) -> Bool {
        let count = bytes.count
        switch state {
        case .header(let seen):
            let byte = bytes[index]
            index += 1
            let fits: Bool
            switch seen {
            case 0..<4: fits = byte == Self.signature[seen]
            case 4: fits = byte == UInt8(ascii: "7") || byte == UInt8(ascii: "9")
            case 5: fits = byte == UInt8(ascii: "a")
            default: fits = true
            }
            guard fits else {
                state = .broken(.showsNothing("the GIF does not start with GIF87a or GIF89a"))
                return false
            }
            switch seen {
            case 6, 7: screenWidth |= Int(byte) << (8 * (seen - 6))
            case 8, 9: screenHeight |= Int(byte) << (8 * (seen - 8))
            // The logical screen descriptor's packed byte: a global colour table, and its size.
            case 10: screenPacked = byte
            default: break
            }
            state = seen < 12 ? .header(seen + 1) : Self.table(packed: screenPacked, image: false) ?? .introducer
        case .table(let left, let image):
            let taken = min(left, count - index)
            index += taken
            state = taken < left ? .table(left: left - taken, image: image) : image ? .codeSize : .introducer
        case .introducer:
            let byte = bytes[index]
            index += 1
            switch byte {
            case 0x21: state = .label
            case 0x2C: state = .descriptor(0)
            case 0x3B:
                state = frames > 0 ? .end : .broken(.showsNothing("the GIF has no image before its trailer"))
            default:
                state = .broken(
                    damage(
                        "the byte at \(offset + index - 1) (0x\(byte.hexDigits)) starts no block; a decoder "
                            + "stops there"
                    ))
                return false
            }
        case .label:
            index += 1
            state = .size
        case .descriptor(let seen):
            let byte = bytes[index]
            index += 1
            if frames == 0, seen < 8 { firstImage |= UInt64(byte) << (8 * seen) }
            guard seen == 8 else {
                state = .descriptor(seen + 1)
                return true
            }
            // The descriptor's packed byte: a local colour table, and its size.
            state = Self.table(packed: byte, image: true) ?? .codeSize
        case .codeSize:
            index += 1
            frames += 1
            inImage = true
            state = .size
        case .size:
            let size = Int(bytes[index])
            index += 1
            if size == 0 { inImage = false }
            state = size == 0 ? .introducer : .subBlock(left: size)
        case .subBlock(let left):
            let taken = min(left, count - index)
            index += taken
            state = taken < left ? .subBlock(left: left - taken) : .size
        case .end, .broken:
            return false
        }
        return true
    }

    /// The colour table a packed byte declares (bit 7: present; bits 0-2: 2^(n+1) entries of 3 bytes), or nil.
    private static func table(packed: UInt8, image: Bool) -> State? {
        guard packed & 0x80 != 0 else { return nil }
        return .table(left: 3 << (Int(packed & 0x07) + 1), image: image)
    }

    /// A fault: a phone shows part of the picture when an image's data had begun, else nothing.
    private func damage(_ detail: String) -> MediaStructure.Verdict {
        frames > 0 ? .showsPart("the GIF is damaged: \(detail)") : .showsNothing("the GIF is damaged: \(detail)")
    }

    /// The logical screen, grown to the first image's extent where that reaches beyond it, times the images whose
    /// data began, once one has: a phone's decoder (ImageIO, WebKit's `GIFImageReader`) makes a canvas of the
    /// logical screen's size for the frames, however small they are, and libvips's `gifload` (libnsgif) takes a
    /// logical screen over 2048 pixels a side for a mistake and reports the frames' extent instead, so its header
    /// alone let a 60000 x 60000 screen with one 10 x 10 frame through. libnsgif grows its canvas to the first
    /// frame's extent, not a later one's (vipsheader 8.14: a 10 x 10 screen with a first frame of 9000 x 9000 is
    /// 9000 x 9000, with that frame second 10 x 10): counted here, so that what a file's first bytes declare
    /// (`MediaStructure.declared(byHead:type:)`, `explain`) covers what libvips's header says of it.
    var declared: ImageHeader? {
        guard frames > 0 else { return nil }
        func side(_ shift: UInt64) -> Int { Int(firstImage >> shift & 0xFFFF) }
        return ImageHeader(
            width: max(screenWidth, side(0) + side(32)), height: max(screenHeight, side(16) + side(48)),
            pages: frames, hasAlpha: false, decoder: nil)
    }

    var verdict: MediaStructure.Verdict {
        switch state {
        case .end: return .whole
        case .broken(let verdict): return verdict
        default:
            if frames == 0 {
                return .showsNothing("the GIF is cut short at byte \(offset), before its first image's data")
            }
            return .showsPart(
                "the GIF is cut short: no trailer in its \(offset) bytes, which end \(inImage ? "in" : "after") "
                    + "frame \(frames)"
            )
        }
    }
}
