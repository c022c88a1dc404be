/// An MP4's or M4A's structure (ISO/IEC 14496-12, the ISO base media file format, 4.2), walked as its bytes come:
/// top-level boxes chained to the end of the file, each a 32-bit size and a type (a size of 1: a 64-bit size
/// follows; 0: the box runs to the end of the file), its body skipped by its size; inside the first `moov` box, its
/// children chained to its end, one level down. No sample is read.
///
/// What a player needs, in either order: a whole `moov` holding an `mvhd` and a `trak` (ffmpeg's `mov_read_header`
/// fails with "moov atom not found" without one, and reads no stream without a `trak`), and an `mdat` with media
/// data. Faults: a top-level type that is not 4 printable ASCII bytes (every box type is a four-character code; an
/// HTML page after an `ftyp` reads as none, or as a box running far past the end), a size under its header's
/// length, a `moov` child running past the `moov`'s end. A fault, or the end of the bytes inside a box, once the
/// `moov` came whole and media data with it, is a file a phone plays in part (a player plays what is there, as it
/// plays a file still downloading); before that, one it plays nothing of.
struct MP4Structure: StructureWalk {
    private enum State {
        /// How many bytes of a box's size and type have come (into `field`); whether it is a `moov` child.
        case header(Int, inMoov: Bool)
        /// How many bytes of a box's 64-bit size have come (into `field`).
        case largesize(Int, inMoov: Bool)
        /// Inside a box's body: the bytes left (nil: to the end of the file).
        case body(left: Int?, inMoov: Bool)
        case broken(MediaStructure.Verdict)
    }

    private var state = State.header(0, inMoov: false)
    var offset = 0
    /// The bytes of the field being read, big-endian.
    private var field: UInt64 = 0
    /// The current box: its type (four bytes, big-endian), where it starts, its 32-bit size field, its size with
    /// its header (nil: to the end of the file).
    private var type: UInt32 = 0
    private var start = 0
    private var size32: UInt32 = 0
    private var size: Int?
    /// The first `moov`: whether it began, where it starts and ends (nil: at the end of the file), and the
    /// children seen in it.
    private var sawMoov = false
    private var moovStart = 0
    private var moovEnd: Int?
    private var sawMVHD = false
    private var sawTRAK = false
    /// Whether that `moov` came whole, with an `mvhd` and a `trak`.
    private var moovWhole = false
    /// The bytes of `mdat` bodies that came (a body is an `mdat`'s when its box, `type`, is one outside `moov`).
    private var mediaBytes = 0

    private static let moov: UInt32 = 0x6D6F_6F76
    private static let mdat: UInt32 = 0x6D64_6174
    private static let mvhd: UInt32 = 0x6D76_6864
    private static let trak: UInt32 = 0x7472_616B
    private static let uuid: UInt32 = 0x7575_6964

    mutating func step(_ bytes: UnsafeRawBufferPointer, _ index: inout Int) -> Bool {
        switch state {
        case .header(let seen, let inMoov):
            field = field << 8 | UInt64(bytes[index])
            index += 1
            guard seen == 7 else {
                state = .header(seen + 1, inMoov: inMoov)
                return true
            }
            start = offset + index - 8
            size32 = UInt32(truncatingIfNeeded: field >> 32)
            type = UInt32(truncatingIfNeeded: field)
            field = 0
            if !inMoov, !FourCharacterCode.isPrintable(type) {
                return fail("there is no box at byte \(start) (its type is not four printable characters)")
            }
            guard size32 != 1 else {
                state = .largesize(0, inMoov: inMoov)
                return true
            }
            // A size of 0: to the end of the file for a top-level box, to the end of the moov for its child.
            return begin(size: size32 == 0 ? (inMoov ? moovEnd.map { $0 - start } : nil) : Int(size32), inMoov: inMoov)
        case .largesize(let seen, let inMoov):
            field = field << 8 | UInt64(bytes[index])
            index += 1
            guard seen == 7 else {
                state = .largesize(seen + 1, inMoov: inMoov)
                return true
            }
            let large = field
            field = 0
            // A size past Int.max runs past the end of any file.
            return begin(size: large > UInt64(Int.max) ? Int.max : Int(large), inMoov: inMoov)
        case .body(let left, let inMoov):
            let taken = min(left ?? Int.max, bytes.count - index)
            index += taken
            if !inMoov, type == Self.mdat { mediaBytes += taken }
            guard let left, taken == left else {
                state = .body(left: left.map { $0 - taken }, inMoov: inMoov)
                return false
            }
            return ended(inMoov: inMoov)
        case .broken:
            return false
        }
    }

    /// Starts the box whose header was just read, of `size` bytes (nil: to the end of the file); false on a fault.
    private mutating func begin(size: Int?, inMoov: Bool) -> Bool {
        self.size = size
        let header = (size32 == 1 ? 16 : 8) + (type == Self.uuid ? 16 : 0)
        if let size, size < header {
            return fail(
                "its \(name) box at byte \(start) declares \(size) bytes, fewer than its \(header)-byte header",
                inMoov: inMoov)
        }
        if inMoov {
            if let moovEnd, let size, size > moovEnd - start {
                return fail(
                    "the \(name) box at byte \(start) in its moov box declares \(size) bytes, past the moov's end at "
                        + "byte \(moovEnd)",
                    inMoov: true)
            }
            if type == Self.mvhd { sawMVHD = true }
            if type == Self.trak { sawTRAK = true }
        } else if type == Self.moov, !sawMoov {
            // The first moov is the one a player reads (ffmpeg skips any other): its children come next.
            sawMoov = true
            moovStart = start
            moovEnd = size.map { start + $0 }
            if size == header { return moovEnded() }
            state = .header(0, inMoov: true)
            return true
        }
        let left = size.map { $0 - header }
        if left == 0 { return ended(inMoov: inMoov) }
        state = .body(left: left, inMoov: inMoov)
        return true
    }

    /// Past the end of the current box's body, a top-level box's or a `moov` child's; false on a fault.
    private mutating func ended(inMoov: Bool) -> Bool {
        // A child ends inside the moov (its size was checked against the moov's end), or at it.
        if inMoov, let moovEnd, let size, start + size == moovEnd { return moovEnded() }
        state = .header(0, inMoov: inMoov)
        return true
    }

    /// The `moov`'s end came: whole when it holds what a player reads, else a fault.
    private mutating func moovEnded() -> Bool {
        guard sawMVHD, sawTRAK else { return fail(moovLacks, inMoov: true) }
        moovWhole = true
        state = .header(0, inMoov: false)
        return true
    }

    /// What the `moov` lacks, that a player reads.
    private var moovLacks: String {
        "its moov box at byte \(moovStart) holds no \(sawMVHD ? "trak" : "mvhd") box: nothing a player can read"
    }

    /// A fault in the current box: the verdict is final (nothing, inside the `moov`).
    private mutating func fail(_ detail: String, inMoov: Bool = false) -> Bool {
        state = .broken(
            inMoov ? .showsNothing("the MP4 is damaged: \(detail)") : damage("the MP4 is damaged: \(detail)"))
        return false
    }

    /// `detail`, of a fault or an end outside the `moov`: a phone plays what came once the `moov` came whole and
    /// media data with it, else nothing.
    private func damage(_ detail: String) -> MediaStructure.Verdict {
        if !moovWhole { return .showsNothing("\(detail), before a whole moov box: nothing a player can read") }
        if mediaBytes == 0 { return .showsNothing("\(detail), before any media data (an mdat box)") }
        return .showsPart(detail)
    }

    /// The current box's type, as text (in hex when a `moov` child's is not printable).
    private var name: String {
        FourCharacterCode.isPrintable(type) ? FourCharacterCode.text(type) : FourCharacterCode.quoted(type)
    }

    var verdict: MediaStructure.Verdict {
        switch state {
        case .broken(let verdict):
            return verdict
        case .header(0, inMoov: false), .body(left: nil, inMoov: false):
            return atEnd(moovWhole: moovWhole)
        case .header(0, inMoov: true) where moovEnd == nil, .body(left: nil, inMoov: true) where moovEnd == nil:
            // A moov of size 0 runs to the end of the file: it ends here.
            guard sawMVHD, sawTRAK else { return .showsNothing("the MP4 is damaged: \(moovLacks)") }
            return atEnd(moovWhole: true)
        case .header(_, inMoov: true), .largesize(_, inMoov: true), .body(_, inMoov: true):
            return .showsNothing(
                "the MP4 is cut short at byte \(offset), inside its moov box at byte \(moovStart)"
                    + (moovEnd.map { " (of \($0 - moovStart) bytes)" } ?? "") + ": nothing a player can read")
        case .header, .largesize:
            return damage("the MP4 is cut short at byte \(offset), in a box header")
        case .body(let left?, inMoov: false):
            let declared = size ?? 0
            return damage(
                "the MP4 is cut short: its \(name) box at byte \(start) declares \(declared) bytes, "
                    + "\(declared - left) came")
        }
    }

    /// The verdict at a box's end, the end of the bytes: whole when a player has what it reads.
    private func atEnd(moovWhole: Bool) -> MediaStructure.Verdict {
        if !moovWhole { return .showsNothing("the MP4 has no moov box: nothing a player can read") }
        if mediaBytes == 0 { return .showsNothing("the MP4 has no media data (no mdat box with bytes)") }
        return .whole
    }
}
