/// An MPEG-1 or MPEG-2 program stream's structure (ISO/IEC 11172-1 2.4.3, 13818-1 2.5.3), walked as its bytes come:
/// packs and packets, each at a start code (`00 00 01` and a code), skipped by the lengths they declare: a pack
/// header (`BA`: 12 bytes in MPEG-1; 14 and up to 7 stuffing bytes, its last 3 bits' count, in MPEG-2), a system
/// header (`BB`) and every packet (`BC` to `FF`: the program stream map, private and padding streams, audio and
/// video) by their 16-bit lengths; through to the end code (`B9`) or the end of the bytes. Zero bytes before a start
/// code are passed over. Bytes after the end code are not looked at. No elementary stream is read.
///
/// What a player needs: a pack header first (what libmagic types a program stream by, "MPEG sequence, v1/v2, system
/// multiplex") and an audio or video packet (`C0` to `EF`, or the private stream `BD`) whole. Faults: bytes that are
/// no start code where the next pack or packet should start (an HTML page after a pack header), a code that starts
/// neither (`00` to `B8`: an elementary stream's, which lies inside packets), a pack header of neither version. A
/// fault or the end of the bytes inside a packet, once an audio or video packet came whole, is a file a phone plays
/// in part; before, one it plays nothing of. An elementary video stream (a sequence header, `B3`, first) declares no
/// lengths to walk: it is not judged (whole).
struct ProgramStreamStructure: StructureWalk {
    private enum State {
        /// How many bytes of a start code have come (`00 00 01`, then its code; 2 after any number of zero bytes).
        case code(Int)
        /// How many bytes of a pack header have come after its start code.
        case pack(Int)
        /// How many bytes of a system header's or packet's length have come (into `field`).
        case length(Int)
        /// Inside a pack's stuffing, or a system header's or packet's body: the bytes left.
        case skip(left: Int)
        /// Past the end code, or an elementary stream: nothing more is looked at.
        case end
        case broken(MediaStructure.Verdict)
    }

    private var state = State.code(0)
    var offset = 0
    /// The bytes of the field being read, big-endian.
    private var field: UInt64 = 0
    /// The current pack or packet: its code, where it starts, its length after its code (once known).
    private var code: UInt8 = 0
    private var start = 0
    private var length = 0
    /// Whether the current pack header is MPEG-2's.
    private var mpeg2 = false
    /// Packs and audio or video packets that came whole.
    private var packs = 0
    private var media = 0

    mutating func step(_ bytes: UnsafeRawBufferPointer, _ index: inout Int) -> Bool {
        if case .code(0) = state, whole(bytes, &index) { return true }
        switch state {
        case .code(let seen):
            let byte = bytes[index]
            index += 1
            // Zero bytes may come before a start code: the first three bytes are `00 00 01` once one does.
            if seen < 3 {
                if seen == 0 { start = offset + index - 1 }
                if byte == 0 {
                    state = .code(min(seen + 1, 2))
                    return true
                }
                guard byte == 1, seen == 2 else { return fail("there is no start code at byte \(start)") }
                start = offset + index - 3
                state = .code(3)
                return true
            }
            code = byte
            return begin()
        case .pack(let seen):
            let byte = bytes[index]
            index += 1
            // The byte after the code tells the version: 0010 (MPEG-1), 01 (MPEG-2).
            if seen == 0 {
                guard byte >> 4 == 0b0010 || byte >> 6 == 0b01 else {
                    return fail("its pack header at byte \(start) is neither MPEG-1's nor MPEG-2's")
                }
                mpeg2 = byte >> 6 == 0b01
            }
            guard seen + 1 == (mpeg2 ? 10 : 8) else {
                state = .pack(seen + 1)
                return true
            }
            packEnded(last: byte)
        case .length(let seen):
            field = field << 8 | UInt64(bytes[index])
            index += 1
            guard seen == 1 else {
                state = .length(1)
                return true
            }
            let declared = Int(field & 0xFFFF)
            field = 0
            return packet(length: declared)
        case .skip(let left):
            let taken = min(left, bytes.count - index)
            index += taken
            guard taken == left else {
                state = .skip(left: left - taken)
                return false
            }
            return ended()
        case .end, .broken:
            return false
        }
        return true
    }

    /// A pack header, or a system header's or packet's start code and length, read at once when it lies whole in
    /// `bytes` from `index` (most do: a pack is a disk sector, 2,048 bytes, in a DVD's stream), moving `index` past
    /// it; false, `index` unmoved, for what the bytes a step at a time read (zero bytes, a fault, the end code, a
    /// header cut by the piece).
    private mutating func whole(_ bytes: UnsafeRawBufferPointer, _ index: inout Int) -> Bool {
        let left = bytes.count - index
        guard left >= 6, bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1,
            packs > 0 || bytes[index + 3] == 0xBA
        else { return false }
        let next = bytes[index + 3]
        switch next {
        case 0xBA:
            let version = bytes[index + 4]
            let isMPEG2 = version >> 6 == 0b01
            guard isMPEG2 || version >> 4 == 0b0010, left >= (isMPEG2 ? 14 : 12) else { return false }
            (start, code, mpeg2, length) = (offset + index, next, isMPEG2, 0)
            index += isMPEG2 ? 14 : 12
            packEnded(last: bytes[index - 1])
        case 0xBB...0xFF:
            (start, code) = (offset + index, next)
            let declared = Int(bytes[index + 4]) << 8 | Int(bytes[index + 5])
            index += 6
            return packet(length: declared)
        default:
            return false
        }
        return true
    }

    /// A pack header ended with `byte`: counted, then its stuffing (MPEG-2's, counted in its last byte) skipped.
    private mutating func packEnded(last byte: UInt8) {
        packs += 1
        let stuffing = mpeg2 ? Int(byte & 0b111) : 0
        state = stuffing > 0 ? .skip(left: stuffing) : .code(0)
    }

    /// A system header's or packet's length came: its bytes are skipped.
    private mutating func packet(length: Int) -> Bool {
        self.length = length
        if length == 0 { return ended() }
        state = .skip(left: length)
        return true
    }

    /// The start code's `code` came: a pack, a system header or packet, the end, or a fault.
    private mutating func begin() -> Bool {
        length = 0
        switch code {
        case 0xBA:
            state = .pack(0)
        case 0xB3 where packs == 0:
            // An elementary video stream: no lengths to walk.
            state = .end
            return false
        case _ where packs == 0:
            return fail("it does not start with a pack header (00 00 01 BA)")
        case 0xB9:
            state = .end
            return false
        case 0xBB...0xFF:
            state = .length(0)
        default:
            return fail(
                "the start code 00 00 01 \(code.hexDigits) at byte \(start) starts no pack or packet")
        }
        return true
    }

    /// Past a pack's stuffing, or a system header's or packet's body: the next start code.
    private mutating func ended() -> Bool {
        if code == 0xBD || (0xC0...0xEF).contains(code) { media += 1 }
        state = .code(0)
        return true
    }

    /// A fault at `start`: the verdict is final.
    private mutating func fail(_ detail: String) -> Bool {
        state = .broken(damage("the MPEG stream is damaged: \(detail)"))
        return false
    }

    /// `detail`, of a fault or an end: a phone plays what came once an audio or video packet came whole.
    private func damage(_ detail: String) -> MediaStructure.Verdict {
        media > 0 ? .showsPart(detail) : .showsNothing("\(detail), before any whole audio or video packet")
    }

    /// The current pack or packet, as a detail names it.
    private var name: String {
        code == 0xBA ? "pack header" : code == 0xBB ? "system header" : "packet (stream \(code.hexDigits))"
    }

    var verdict: MediaStructure.Verdict {
        switch state {
        case .end:
            // The end code, or an elementary stream, which is not walked.
            if packs > 0, media == 0 { return .showsNothing("the MPEG stream has no audio or video packet") }
            return .whole
        case .broken(let verdict):
            return verdict
        case .code(0...2):
            // Zero bytes at the end are passed over, as before a start code.
            return media > 0 ? .whole : .showsNothing("the MPEG stream has no audio or video packet")
        case .code:
            return damage("the MPEG stream is cut short at byte \(offset), in a start code")
        case .skip where code == 0xBA, .pack, .length:
            return damage(
                "the MPEG stream is cut short at byte \(offset), in the header of its \(name) at byte \(start)")
        case .skip(let left):
            return damage(
                "the MPEG stream is cut short: its \(name) at byte \(start) declares \(length) bytes, "
                    + "\(length - left) came")
        }
    }
}
