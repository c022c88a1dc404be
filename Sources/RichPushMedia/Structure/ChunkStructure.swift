/// A WAV's, AVI's or AIFF's structure, walked as its bytes come: Microsoft's RIFF (`RIFF` <size, little-endian>
/// `WAVE` or `AVI `; for a WAV, `RIFX`, big-endian, or `RF64` and `BW64`, whose sizes past 4 GB are in a `ds64`
/// chunk) or EA IFF 85 (`FORM` <size, big-endian> `AIFF` or `AIFC`), then chunks, each a four-character id, a size
/// and its data, with a pad byte after an odd size, skipped by their sizes (a LIST's type is read, nothing else
/// inside it). Bytes after the form's declared end are not looked at,
/// as decoders do not look at them (an AVI over 1 GB continues in `RIFF AVIX` forms there).
///
/// What a player needs, as ffmpeg's demuxers read them: a WAV's `fmt ` chunk (at least 14 bytes, some channels,
/// a sample rate: `ff_get_wav_header`) before its `data` chunk (`wav_read_header`: "found no 'fmt ' tag before the
/// 'data' tag"); an AVI's `hdrl` list, which declares its streams, before its `movi` list (`avi_read_header` stops
/// reading the header at `movi`, and fails when the file ends first; its index, `idx1`, is optional); an AIFF's
/// `COMM` (at least 18 bytes, some channels) and `SSND` chunks, in any order. A `data` chunk or `movi` list of
/// size 0 or 0xFFFFFFFF runs to the end of the file (what a writer that could not seek back leaves: ffmpeg's own
/// WAV and AVI through a pipe; `wav_read_header` and `avi_read_header` read them so), and a form size of 0 or
/// 0xFFFFFFFF (or under 4) declares no end. Faults: a chunk id that is not 4 printable ASCII bytes (an HTML page
/// after a RIFF header reads as none, or as a chunk running far past the end), a format chunk too short, without
/// channels or (a WAV's) without a sample rate.
/// A fault or the end of the bytes before the form's end is a file a phone plays in part when its format chunk
/// came whole and some of its media data (the samples; an AVI's `movi` list) came, else one it plays nothing of.
struct ChunkStructure: StructureWalk {
    /// The three forms, and what each needs.
    enum Form {
        case wave, avi, aiff

        /// The ids of the chunks a player needs: the one that declares the format, and the one holding the media data.
        fileprivate var format: UInt32 { self == .wave ? Self.fmt : self == .avi ? Self.hdrl : Self.COMM }
        fileprivate var media: UInt32 { self == .wave ? Self.data : self == .avi ? Self.movi : Self.SSND }
        /// The fewest bytes a format chunk holds (a WAVEFORMAT; an AIFF's COMM; a LIST's type).
        fileprivate var formatBytes: Int { self == .wave ? 14 : self == .avi ? 4 : 18 }

        fileprivate static let fmt: UInt32 = 0x666D_7420
        fileprivate static let data: UInt32 = 0x6461_7461
        fileprivate static let hdrl: UInt32 = 0x6864_726C
        fileprivate static let movi: UInt32 = 0x6D6F_7669
        fileprivate static let COMM: UInt32 = 0x434F_4D4D
        fileprivate static let SSND: UInt32 = 0x5353_4E44

        /// Its name in a detail.
        fileprivate var name: String { self == .wave ? "WAV" : self == .avi ? "AVI" : "AIFF" }
        /// How a detail names its format and media chunks.
        fileprivate var formatName: String { self == .wave ? "fmt chunk" : self == .avi ? "hdrl list" : "COMM chunk" }
        fileprivate var mediaName: String { self == .wave ? "data chunk" : self == .avi ? "movi list" : "SSND chunk" }
    }

    private enum State {
        /// How many of the form's 12 header bytes have come (its id and size into `field`, its type into `id`).
        case header(Int)
        /// How many of a chunk's 8 header bytes have come (into `field`).
        case chunk(Int)
        /// The first bytes of a chunk's data (a LIST's type, a format's channels): how many came, how many in all.
        case leading(Int, of: Int)
        /// Inside a chunk's data: the bytes left (nil: to the end of the file).
        case body(left: Int?)
        /// The pad byte after a chunk of an odd size.
        case pad
        /// Past the form's declared end.
        case end
        case broken(MediaStructure.Verdict)
    }

    private let form: Form
    private var state = State.header(0)
    var offset = 0
    /// Sizes are big-endian (FORM, RIFX).
    private var bigEndian: Bool
    /// The bytes of the field being read, big-endian; the first bytes of the current chunk's data, big-endian.
    private var field: UInt64 = 0
    private var leading: UInt64 = 0
    /// The current chunk: its id, where it starts, its size as declared (a media chunk that runs to the end of the
    /// file is in `.body(left: nil)`, which never reads it).
    private var id: UInt32 = 0
    private var start = 0
    private var size = 0
    /// Where the form ends, as declared (nil: it declares no end).
    private var formEnd: Int?
    /// Whether the format chunk came whole; where the media data starts and ends (nil: not yet, or at the end of
    /// the file), once its chunk began.
    private var formatWhole = false
    private var mediaStart: Int?
    private var mediaEnd: Int?
    /// The chunk being read is the format chunk; its LIST type, when it is a LIST.
    private var inFormatChunk = false
    private var listType: UInt32?

    private static let LIST: UInt32 = 0x4C49_5354
    /// Media data has come once more than the first 8 bytes of its chunk came: past an SSND's offset and block
    /// size, a movi list's type and its first chunk's id, two frames of a WAV's 16-bit stereo samples.
    private static let mediaFrom = 8

    init(_ form: Form) {
        self.form = form
        bigEndian = form == .aiff
    }

    mutating func step(_ bytes: UnsafeRawBufferPointer, _ index: inout Int) -> Bool {
        switch state {
        case .header(let seen):
            let byte = bytes[index]
            index += 1
            if seen < 8 { field = field << 8 | UInt64(byte) } else { id = id << 8 | UInt32(byte) }
            guard seen == 11 else {
                state = .header(seen + 1)
                if seen == 3, let fault = container(UInt32(truncatingIfNeeded: field)) {
                    state = .broken(.showsNothing(fault))
                    return false
                }
                return true
            }
            guard typed else {
                state = .broken(
                    .showsNothing("the \(form.name) is damaged: its form type is \(FourCharacterCode.quoted(id))"))
                return false
            }
            let declared = Int(order(UInt32(truncatingIfNeeded: field)))
            // 0 and 0xFFFFFFFF are what a writer that could not seek back leaves: no end declared.
            formEnd = declared >= 4 && declared != 0xFFFF_FFFF ? 8 + declared : nil
            field = 0
            state = .chunk(0)
        case .chunk(let seen):
            field = field << 8 | UInt64(bytes[index])
            index += 1
            guard seen == 7 else {
                state = .chunk(seen + 1)
                return true
            }
            start = offset + index - 8
            id = UInt32(truncatingIfNeeded: field >> 32)
            let declared = Int(order(UInt32(truncatingIfNeeded: field)))
            field = 0
            guard FourCharacterCode.isPrintable(id) else {
                return fail("there is no chunk at byte \(start) (its id is not four printable characters)")
            }
            size = declared
            leading = 0
            listType = nil
            state = .leading(0, of: min(declared, 8))
            if declared == 0 { return enter() }
        case .leading(let seen, let count):
            leading = leading << 8 | UInt64(bytes[index])
            index += 1
            guard seen + 1 == count else {
                state = .leading(seen + 1, of: count)
                return true
            }
            return enter()
        case .body(let left):
            let taken = min(left ?? Int.max, bytes.count - index)
            index += taken
            guard let left, taken == left else {
                state = .body(left: left.map { $0 - taken })
                return false
            }
            return ended()
        case .pad:
            index += 1
            return next(at: offset + index)
        case .end, .broken:
            return false
        }
        return true
    }

    /// Why the first 4 bytes, `container`, are not this form's, or nil.
    private mutating func container(_ container: UInt32) -> String? {
        switch (form, container) {
        // RF64 and BW64 (EBU Tech 3306, ITU-R BS.2088) are a WAV past 4 GB: their sizes are in a ds64 chunk, and
        // 0xFFFFFFFF in the RIFF and data sizes, read here as "to the end".
        case (.aiff, 0x464F_524D), (.wave, 0x5249_4646), (.avi, 0x5249_4646), (.wave, 0x5246_3634),
            (.wave, 0x4257_3634):
            return nil
        case (.wave, 0x5249_4658):
            bigEndian = true
            return nil
        default:
            return "the \(form.name) is damaged: it starts with \(FourCharacterCode.quoted(container)), not "
                + (form == .aiff ? "FORM" : "RIFF")
        }
    }

    /// Whether the form type (`id`) is this form's.
    private var typed: Bool {
        switch form {
        case .wave: return id == 0x5741_5645
        case .avi: return id == 0x4156_4920
        case .aiff: return id == 0x4149_4646 || id == 0x4149_4643
        }
    }

    /// The chunk's first bytes came (`leading`, at most 8): tells what it is, checks a format chunk, then skips the
    /// rest; false on a fault.
    private mutating func enter() -> Bool {
        let declared = size
        let read = min(declared, 8)
        listType = id == Self.LIST && declared >= 4 ? UInt32(truncatingIfNeeded: leading >> (8 * (read - 4))) : nil
        let kind = listType ?? id
        if kind == form.format, !formatWhole {
            if let fault = formatFault(declared) { return refuse(fault) }
            inFormatChunk = true
        } else if kind == form.media, mediaStart == nil {
            if form != .aiff, !formatWhole {
                return refuse("its \(form.mediaName) at byte \(start) comes before its \(form.formatName)")
            }
            let bodyStart = start + 8
            mediaStart = bodyStart + Self.mediaFrom
            // A media chunk of size 0 or 0xFFFFFFFF runs to the end of the file.
            if declared == 0 || declared == 0xFFFF_FFFF {
                state = .body(left: nil)
                return false
            }
            mediaEnd = bodyStart + declared
        }
        if declared > read {
            state = .body(left: declared - read)
            return true
        }
        return ended()
    }

    /// Why a format chunk of `declared` bytes, its first bytes in `leading`, is not one a player reads, or nil.
    private func formatFault(_ declared: Int) -> String? {
        if declared < form.formatBytes {
            return "its \(form.formatName) at byte \(start) holds \(declared) bytes, fewer than \(form.formatBytes)"
        }
        let first = { (shift: UInt64) in UInt32(truncatingIfNeeded: leading >> shift) }
        switch form {
        case .wave:
            // wFormatTag, nChannels, nSamplesPerSec, little-endian (or big-endian in a RIFX).
            let channels = bigEndian ? first(32) & 0xFFFF : (first(32) & 0xFF) << 8 | first(40) & 0xFF
            let rate = order(first(0))
            if channels == 0 { return "its fmt chunk at byte \(start) declares no channels" }
            if rate == 0 { return "its fmt chunk at byte \(start) declares a sample rate of 0" }
        case .aiff:
            if first(48) & 0xFFFF == 0 { return "its COMM chunk at byte \(start) declares no channels" }
        case .avi:
            break
        }
        return nil
    }

    /// Past the current chunk's data: its pad byte next when its size is odd, else the next chunk.
    private mutating func ended() -> Bool {
        if inFormatChunk {
            formatWhole = true
            inFormatChunk = false
        }
        if size % 2 == 1 {
            state = .pad
            return true
        }
        return next(at: start + 8 + size)
    }

    /// At `position`, after a chunk: the next chunk, or the form's end when it is reached and what a player needs
    /// came (before then, a wrong form size is passed over, as ffmpeg, which does not read it, passes it).
    private mutating func next(at position: Int) -> Bool {
        if let formEnd, position >= formEnd, formatWhole, mediaStart != nil {
            state = .end
            return false
        }
        state = .chunk(0)
        return true
    }

    /// A fault in the current chunk: the verdict is final.
    private mutating func fail(_ detail: String) -> Bool {
        state = .broken(damage("the \(form.name) is damaged: \(detail)", at: start))
        return false
    }

    /// A fault in the format chunk, or the media chunk before it: a phone plays nothing.
    private mutating func refuse(_ detail: String) -> Bool {
        state = .broken(.showsNothing("the \(form.name) is damaged: \(detail): nothing a player reads"))
        return false
    }

    /// The current chunk, as a detail names it.
    private var chunkName: String {
        listType.map { "\(FourCharacterCode.quoted($0)) list" } ?? "\(FourCharacterCode.quoted(id)) chunk"
    }

    /// `detail`, of a fault or the end of the bytes at `position`: a phone plays what came once the format chunk
    /// came whole and media data after it, else nothing.
    private func damage(_ detail: String, at position: Int) -> MediaStructure.Verdict {
        if !formatWhole { return .showsNothing("\(detail), before a whole \(form.formatName): nothing a player reads") }
        guard let mediaStart, min(position, mediaEnd ?? Int.max) > mediaStart else {
            return .showsNothing("\(detail), before any media data (its \(form.mediaName))")
        }
        return .showsPart(detail)
    }

    /// A size field as the form orders it, from its bytes read big-endian.
    private func order(_ value: UInt32) -> UInt32 { bigEndian ? value : value.byteSwapped }

    var verdict: MediaStructure.Verdict {
        switch state {
        case .end:
            return .whole
        case .broken(let verdict):
            return verdict
        case .header:
            return .showsNothing("the \(form.name) is cut short at byte \(offset), in its header")
        case .chunk(0), .pad:
            // A missing pad byte at the very end is passed over (writers leave it out; decoders do not need it).
            if !formatWhole {
                return .showsNothing("the \(form.name) has no \(form.formatName): nothing a player reads")
            }
            guard let mediaStart else { return .showsNothing("the \(form.name) has no \(form.mediaName)") }
            guard min(offset, mediaEnd ?? Int.max) > mediaStart else {
                return .showsNothing("the \(form.name)'s \(form.mediaName) holds no media data")
            }
            var came = offset
            if case .pad = state { came += 1 }
            if let formEnd, came < formEnd {
                return .showsPart(
                    "the \(form.name) is cut short: its header declares \(formEnd) bytes, \(offset) came")
            }
            return .whole
        case .body(left: nil):
            guard let mediaStart, offset > mediaStart else {
                return .showsNothing("the \(form.name)'s \(form.mediaName) holds no media data")
            }
            return .whole
        case .chunk:
            return damage("the \(form.name) is cut short at byte \(offset), in a chunk header", at: offset)
        case .leading, .body:
            return damage(
                "the \(form.name) is cut short: its \(chunkName) at byte \(start) declares \(size) "
                    + "bytes, \(offset - start - 8) came",
                at: offset)
        }
    }
}
