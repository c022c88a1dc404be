#if canImport(Glibc)
    import Glibc
#endif

/// An MP3's structure, walked as its bytes come: an optional ID3v2 tag (ID3v2.4.0 structure, 3.1: "ID3", a version,
/// flags, a syncsafe size, a 10-byte footer when flagged), then MPEG audio frames (ISO/IEC 11172-3 and 13818-3,
/// layers I to III, MPEG-1, 2 and 2.5), each skipped by the length its 4-byte header gives (from its layer, bitrate,
/// sample rate and padding bit), with ID3v1 (`TAG`, 128 bytes), APE (`APETAGEX`) and further ID3v2 tags between or
/// after them. No sample is decoded.
///
/// Players skip what is no frame (mpg123 searches the next 64 KiB for a header, ffmpeg resynchronises), so junk
/// is not a fault by itself: what decides is how much of the audio is frames. A header counts when the next frame
/// or a tag follows where its length ends (the check both make before they trust a header: mpg123's
/// `do_readahead`, ffmpeg's probe chaining frames); a header is valid as `head_check` and
/// `avpriv_mpegaudio_decode_header` take one (sync, no reserved version, layer, bitrate index 15 or sample rate;
/// following frames keep their version, layer and sample rate), a free-format one (bitrate index 0, whose length
/// only the next header tells) aside. The file plays nothing, so is refused, when no two frames follow each other,
/// when fewer than half its bytes after its leading ID3v2 tags are frames (ffmpeg's probe wants chained frames to
/// cover half its buffer before it calls bytes MP3), or when no frame starts within 64 KiB of them (where mpg123
/// gives up its search); a valid header followed by an HTML page is all three. It plays in part when its last frame
/// is cut short, or when bytes between its frames are no frames (a player skips them, with a gap).
struct MP3Structure: StructureWalk {
    private enum State {
        /// At the start, or after a frame or a tag: how many bytes of the next 4 have come (into `window`).
        case unit(Int)
        /// How many bytes of an ID3v2 header have come (10; the first 4 in `window`, the rest in `field`).
        case id3(Int)
        /// How many bytes of an APE tag's header or footer have come (32; the first 4 in `window`).
        case ape(Int)
        /// Inside a frame or a tag: the bytes left.
        case skip(left: Int)
        /// In junk: looking for a byte 0xFF.
        case search
        /// In junk, after a 0xFF: how many bytes of a possible header have come (into `window`).
        case sync(Int)
    }

    /// A frame whose header was read, not yet counted: counted once what follows its end is a frame or a tag.
    private struct Frame {
        var start: Int
        var length: Int
        var header: UInt32
        /// Whether it follows a frame directly (its header counted that frame).
        var chained: Bool
    }

    private var state = State.unit(0)
    var offset = 0
    /// The last 4 bytes read as a possible header, big-endian; the rest of a tag's header.
    private var window: UInt32 = 0
    private var field: UInt64 = 0
    /// Where the current unit (frame, tag, or 4 bytes of junk) starts.
    private var unitStart = 0
    /// Whether the leading ID3v2 tags are behind: the audio starts at `audioStart`.
    private var inAudio = false
    private var audioStart = 0
    private var pending: Frame?
    /// Frames counted, their bytes, where the first starts, and whether two frames followed each other.
    private var frames = 0
    private var frameBytes = 0
    private var firstFrame: Int?
    private var chained = false
    /// Where junk began, while the walk is in it; junk between frames, and where it first began.
    private var brokeAt: Int?
    private var junkBetween = 0
    private var firstJunk = 0

    /// The header's fields every frame of a stream shares: sync, version, layer, sample rate (ffmpeg's
    /// `SAME_HEADER_MASK`).
    private static let sameHeader: UInt32 = 0xFFFE_0C00
    /// How far after its leading tags the first frame may start: mpg123 looks for a header that far.
    static let searchLimit = 64 * 1024

    mutating func step(_ bytes: UnsafeRawBufferPointer, _ index: inout Int) -> Bool {
        let count = bytes.count
        switch state {
        case .unit(let seen):
            if seen == 0 { unitStart = offset + index }
            // Most headers lie whole in the piece: read at once, not a byte a step.
            if seen == 0, index + 4 <= count, let base = bytes.baseAddress {
                window = UInt32(bigEndian: base.loadUnaligned(fromByteOffset: index, as: UInt32.self))
                index += 4
                take(window, at: unitStart)
                return true
            }
            window = window << 8 | UInt32(bytes[index])
            index += 1
            guard seen == 3 else {
                state = .unit(seen + 1)
                return true
            }
            take(window, at: unitStart)
        case .id3(let seen):
            field = field << 8 | UInt64(bytes[index])
            index += 1
            guard seen == 9 else {
                state = .id3(seen + 1)
                return true
            }
            // Revision, flags, then the size: 4 bytes of 7 bits each.
            let size = (0..<4).reduce(0) { $0 << 7 | Int(field >> (8 * (3 - UInt64($1))) & 0x7F) }
            let footer = field >> 32 & 0x10 != 0 ? 10 : 0
            guard field & 0x8080_8080 == 0, field >> 40 & 0xFF != 0xFF else {
                // Not an ID3v2 header (ffmpeg's `ff_id3v2_match`): junk.
                junk(at: unitStart)
                return true
            }
            skipTag(size + footer)
        case .ape(let seen):
            field = field << 8 | UInt64(bytes[index])
            index += 1
            // "AGEX" after "APET", then the version, the size and the item count, then the flags.
            if seen == 7, UInt32(truncatingIfNeeded: field) != 0x4147_4558 {
                junk(at: unitStart)
                return true
            }
            if seen == 15 { window = UInt32(truncatingIfNeeded: field).byteSwapped }
            guard seen == 23 else {
                state = .ape(seen + 1)
                return true
            }
            // A header (flag bit 29) is followed by the items and a footer, its size; a footer ends the tag.
            let flags = UInt32(truncatingIfNeeded: field).byteSwapped
            skipTag(8 + (flags & 0x2000_0000 != 0 ? Int(window) : 0))
        case .skip(let left):
            let taken = min(left, count - index)
            index += taken
            guard taken == left else {
                state = .skip(left: left - taken)
                return false
            }
            state = .unit(0)
        case .search:
            // The search is most of a junk file's walk: each 0xFF whose next 3 bytes are in the piece is judged here,
            // without a step for each.
            guard let base = bytes.baseAddress else { return false }
            var from = index
            while from < count, let found = memchr(base + from, 0xFF, count - from) {
                let at = UnsafeRawPointer(found) - base
                guard at + 4 <= count else {
                    // A header that may run into the next piece: a byte a step.
                    index = at + 1
                    window = 0xFF
                    state = .sync(1)
                    return true
                }
                let header = UInt32(bigEndian: base.loadUnaligned(fromByteOffset: at, as: UInt32.self))
                if let length = Self.length(header) {
                    index = at + 4
                    window = header
                    begin(Frame(start: offset + at, length: length, header: header, chained: false))
                    return true
                }
                from = at + 1
            }
            index = count
            return false
        case .sync(let have):
            window = window << 8 | UInt32(bytes[index])
            index += 1
            guard have == 3 else {
                state = .sync(have + 1)
                return true
            }
            if let length = Self.length(window) {
                begin(Frame(start: offset + index - 4, length: length, header: window, chained: false))
            } else {
                resync(have: 4)
            }
        }
        return true
    }

    /// The 4 bytes at a unit's start, `window`, at `position`: a frame, a tag, or junk.
    private mutating func take(_ window: UInt32, at position: Int) {
        if let length = Self.length(window) {
            startAudio(at: position)
            var frame = Frame(start: position, length: length, header: window, chained: false)
            if let pending, pending.header & Self.sameHeader == window & Self.sameHeader {
                count(pending)
                frame.chained = true
                chained = true
            }
            begin(frame)
        } else if window >> 8 == 0x49_4433, window & 0xFF != 0xFF {
            // "ID3" and a major version: an ID3v2 tag, leading or not.
            endPending()
            field = UInt64(window)
            state = .id3(4)
        } else {
            startAudio(at: position)
            if window >> 8 == 0x54_4147 {
                // "TAG": ID3v1, 128 bytes.
                endPending()
                skipTag(124)
            } else if window == 0x4150_4554 {
                // "APET", perhaps "APETAGEX": a 32-byte APE header or footer.
                endPending()
                field = UInt64(window)
                state = .ape(4)
            } else {
                junk(at: position)
            }
        }
    }

    /// The audio (what follows the leading ID3v2 tags) starts at `position` unless it started before.
    private mutating func startAudio(at position: Int) {
        guard !inAudio else { return }
        inAudio = true
        audioStart = position
    }

    /// A frame's header was read: its body is skipped, and it is counted once what follows it is known.
    private mutating func begin(_ frame: Frame) {
        pending = frame
        state = .skip(left: frame.length - 4)
    }

    /// Counts `frame`: what follows it is a frame or a tag.
    private mutating func count(_ frame: Frame) {
        if let brokeAt, frame.start > brokeAt, frames > 0 {
            if junkBetween == 0 { firstJunk = brokeAt }
            junkBetween += frame.start - brokeAt
        }
        brokeAt = nil
        frames += 1
        frameBytes += frame.length
        if firstFrame == nil { firstFrame = frame.start }
        pending = nil
    }

    /// A tag follows: the frame before it is counted.
    private mutating func endPending() {
        if let pending { count(pending) }
        brokeAt = nil
    }

    /// Skips a tag's `left` bytes after its header. A tag is skipped with no frame pending (the one before it was
    /// counted or dropped), so the bytes skipped are a frame's exactly when one is.
    private mutating func skipTag(_ left: Int) {
        state = left > 0 ? .skip(left: left) : .unit(0)
    }

    /// The 4 bytes at `position` (in `window`) are no frame and no tag: the frame before them is not counted, and a
    /// header is searched for from the next byte.
    private mutating func junk(at position: Int) {
        startAudio(at: position)
        pending = nil
        if brokeAt == nil { brokeAt = position }
        resync(have: 4)
    }

    /// `window` holds `have` bytes that are no header: the search goes on from its next 0xFF, or past it.
    private mutating func resync(have: Int) {
        var left = have - 1
        while left > 0, window >> (8 * UInt32(left - 1)) & 0xFF != 0xFF { left -= 1 }
        state = left > 0 ? .sync(left) : .search
    }

    /// The length of the frame whose header is `header`, or nil when it is none.
    static func length(_ header: UInt32) -> Int? {
        let version = Int(header >> 19 & 3)
        let layer = 4 - Int(header >> 17 & 3)
        let bitrateIndex = Int(header >> 12 & 0xF)
        let rateIndex = Int(header >> 10 & 3)
        // Sync, then reserved values: version 01, layer 00, bitrate 1111, sample rate 11; free format (0000).
        guard header & 0xFFE0_0000 == 0xFFE0_0000, version != 1, layer != 4, bitrateIndex != 0, bitrateIndex != 15,
            rateIndex != 3
        else { return nil }
        let mpeg1 = version == 3
        let kilobits = (mpeg1 ? bitratesMPEG1 : bitratesMPEG2)[layer - 1][bitrateIndex]
        // MPEG-1 at 44.1, 48, 32 kHz; MPEG-2 at half those; MPEG-2.5 at a quarter.
        let rate = [44_100, 48_000, 32_000][rateIndex] >> (mpeg1 ? 0 : version == 2 ? 1 : 2)
        let padding = Int(header >> 9 & 1)
        switch layer {
        case 1: return (12_000 * kilobits / rate + padding) * 4
        case 3 where !mpeg1: return 72_000 * kilobits / rate + padding
        default: return 144_000 * kilobits / rate + padding
        }
    }

    /// Bitrates in kb/s by layer and index: MPEG-1, then MPEG-2 and 2.5 (ISO/IEC 11172-3 2.4.2.3, 13818-3 2.4.2.3).
    private static let bitratesMPEG1: [[Int]] = [
        [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
        [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
        [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
    ]
    private static let bitratesMPEG2: [[Int]] = [
        [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
        [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
        [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
    ]

    var verdict: MediaStructure.Verdict {
        var ended = self
        var cut: (start: Int, length: Int)?
        switch state {
        case .unit, .search, .sync:
            // A frame that ends where the bytes end is counted; a few bytes after it are junk.
            if case .unit = state, let pending { ended.count(pending) }
        case .id3, .ape:
            break
        case .skip(let left):
            if let pending {
                // A frame cut short: when it followed a frame, its bytes are audio a player plays.
                if pending.chained {
                    ended.count(Frame(start: pending.start, length: pending.length - left, header: 0, chained: true))
                    cut = (pending.start, pending.length)
                }
            }
        }
        if !inAudio {
            if case .unit = state { return .showsNothing("the MP3 has no audio after its ID3v2 tag") }
            return .showsNothing("the MP3 is cut short at byte \(offset), in its ID3v2 tag: no audio")
        }
        let audio = offset - audioStart
        let tag = audioStart > 0 ? " after its ID3v2 tag" : ""
        guard ended.chained else {
            return .showsNothing(
                "the MP3 is damaged: no two MPEG audio frames follow each other in its \(audio) bytes\(tag)")
        }
        guard ended.frameBytes * 2 >= audio else {
            return .showsNothing(
                "the MP3 is damaged: only \(ended.frameBytes) of its \(audio) bytes\(tag) are MPEG audio frames")
        }
        if let first = ended.firstFrame, first - audioStart > Self.searchLimit {
            return .showsNothing(
                "the MP3 is damaged: its first MPEG audio frame starts at byte \(first), "
                    + "\(first - audioStart) bytes\(tag) (mpg123 looks \(Self.searchLimit) bytes far)")
        }
        if let cut {
            return .showsPart(
                "the MP3 is cut short: its last frame at byte \(cut.start) declares \(cut.length) bytes, "
                    + "\(offset - cut.start) came")
        }
        if ended.junkBetween > 0 {
            return .showsPart(
                "the MP3 is damaged: \(ended.junkBetween) bytes between its frames, from byte \(ended.firstJunk), are "
                    + "no MPEG audio (a player skips them)")
        }
        return .whole
    }
}
