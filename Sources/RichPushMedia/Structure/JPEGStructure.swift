#if canImport(Glibc)
    import Glibc
#endif

/// A JPEG's structure (ITU-T T.81, annex B), walked as its bytes come: the start-of-image marker (SOI); marker
/// segments skipped by their lengths; after each scan's header (SOS), its entropy-coded data searched (`memchr`)
/// for the next marker that is neither a stuffed 0xFF00 nor a restart (RST0-7); through to the end-of-image marker
/// (EOI). Bytes after EOI are not looked at: decoders stop there.
///
/// Tolerated as libjpeg tolerates them: 0xFF fill bytes before a marker (T.81 B.1.1.2), and bytes between
/// segments that are no marker (libjpeg skips them with a warning, "extraneous bytes before marker"). So the
/// search for a marker is one and the same in scan data and between segments: every byte up to a 0xFF is passed
/// over, and after it 0x00 (stuffing), 0xFF (fill), RSTn, TEM and SOI (no length) are too. Faults: no SOI; a
/// reserved marker (FF 02 to FF BF, which no JPEG holds: a damaged byte in scan data makes one), a segment whose
/// length is below 2, a scan before any frame header, or EOI before any scan (libjpeg's `JERR_UNKNOWN_MARKER`,
/// `JERR_BAD_LENGTH`, `JERR_SOS_NO_SOF`, `JERR_NO_IMAGE`: fatal); and the end of the bytes before EOI. Before
/// the first byte of a scan's data a phone has no picture to show (libjpeg would make a grey rectangle); after
/// it, libjpeg fills what is missing in grey and iOS shows a truncated JPEG cut off where the data ends.
struct JPEGStructure: StructureWalk {
    private enum State {
        /// At the start: how many bytes of SOI (FF D8) have come.
        case start(Int)
        /// Looking for the next marker, in scan data or between segments: whether the last byte was 0xFF.
        case marker(afterFF: Bool)
        /// A segment's length (two bytes, big-endian), and its first byte once it has come.
        case length(high: UInt8?)
        /// Inside a segment: the bytes left, and whether entropy-coded data follows it (SOS).
        case segment(left: Int, scan: Bool)
        /// EOI came.
        case end
        case broken(MediaStructure.Verdict)
    }

    private var state = State.start(0)
    var offset = 0
    /// Frame headers (SOFn) read, and scans whose entropy-coded data began.
    private var frames = 0
    private var scans = 0
    /// Scan headers (SOS) read, data or not: what a decoder's work grows with.
    private var scanHeaders = 0
    /// The most scans a JPEG may have: libjpeg-turbo's advice (`TJPARAM_SCANLIMIT`, djpeg's `-maxscans`: 500) against
    /// progressive JPEGs made to take a decoder's time. An encoder's progressive JPEG has about 10.
    static let maximumScans = 500
    /// Where the last scan's entropy-coded data starts, until a byte of it is known to have come.
    private var scanStart: Int?
    /// The last marker segment: its marker, where it starts, the length it declares (0 until read).
    private var segment: (marker: UInt8, start: Int, length: Int) = (0, 0, 0)

    mutating func step(_ bytes: UnsafeRawBufferPointer, _ index: inout Int) -> Bool {
        let count = bytes.count
        switch state {
        case .start(let seen):
            guard bytes[index] == (seen == 0 ? 0xFF : 0xD8) else {
                state = .broken(.showsNothing("the JPEG does not start with its start-of-image marker (FF D8)"))
                return false
            }
            index += 1
            state = seen == 0 ? .start(1) : .marker(afterFF: false)
        case .marker(false):
            // The search is most of a JPEG's walk: it goes on here past stuffed bytes and restart markers, without a
            // step for each.
            while case .marker(false) = state {
                guard let found = Self.nextFF(bytes, from: index) else { return false }
                index = found + 1
                guard index < count else {
                    state = .marker(afterFF: true)
                    return false
                }
                index += 1
                take(bytes[index - 1], at: offset + index - 2)
            }
        case .marker(true):
            let marker = bytes[index]
            index += 1
            take(marker, at: offset + index - 2)
        case .length(let high):
            let byte = bytes[index]
            index += 1
            guard let high else {
                state = .length(high: byte)
                return true
            }
            segment.length = Int(high) << 8 | Int(byte)
            guard segment.length >= 2 else {
                state = .broken(
                    damage(
                        "its marker segment FF \(segment.marker.hexDigits) at byte \(segment.start) declares a "
                            + "length of \(segment.length), less than 2"
                    ))
                return false
            }
            enter(left: segment.length - 2, scan: segment.marker == 0xDA, index: index)
        case .segment(let left, let scan):
            let taken = min(left, count - index)
            index += taken
            enter(left: left - taken, scan: scan, index: index)
        case .end, .broken:
            return false
        }
        return true
    }

    /// Inside a segment with `left` bytes to come, or past it when none: looking for the next marker, in a scan's
    /// entropy-coded data when it was a scan's header.
    private mutating func enter(left: Int, scan: Bool, index: Int) {
        if left > 0 {
            state = .segment(left: left, scan: scan)
            return
        }
        if scan { scanStart = offset + index }
        state = .marker(afterFF: false)
    }

    /// Counts the last scan as having data when a byte of it came before byte `position`.
    private mutating func scanData(before position: Int) {
        guard let start = scanStart, position > start else { return }
        scans += 1
        scanStart = nil
    }

    /// Takes the byte after a 0xFF, at byte `at`.
    private mutating func take(_ marker: UInt8, at: Int) {
        // A stuffed 0xFF is scan data; any other marker ends the data before it.
        scanData(before: marker == 0x00 ? at + 1 : at)
        switch marker {
        case 0xFF:
            // A fill byte: the marker is still to come.
            break
        case 0x00, 0x01, 0xD0...0xD8:
            // A stuffed 0xFF in scan data (and skipped by libjpeg between segments); TEM, RST0-7 and SOI, which
            // have no length (a second SOI is left to the decoder).
            state = .marker(afterFF: false)
        case 0xD9:
            state =
                scans > 0
                ? .end
                : .broken(
                    .showsNothing("the JPEG ends (end-of-image marker at byte \(at)) before any scan data: no picture"))
        case 0xDA where frames == 0:
            state = .broken(.showsNothing("the JPEG has a scan (SOS at byte \(at)) before any frame header (SOF)"))
        case 0xDA where scanHeaders == Self.maximumScans:
            state = .broken(
                .unbounded(
                    "the JPEG has more than \(Self.maximumScans) scans (the next at byte \(at)); a decoder reads the "
                        + "whole picture again for each (20,000 scans of 7,000 x 7,000 pixels held a transformation "
                        + "thread for 80 s, past any deadline), and libjpeg-turbo advises refusing such files"))
        case 0x02...0xBF:
            state = .broken(damage("FF \(marker.hexDigits) at byte \(at) is no JPEG marker"))
        default:
            // SOF0-15 but DHT (C4), JPG (C8) and DAC (CC).
            if (0xC0...0xCF).contains(marker), marker != 0xC4, marker != 0xC8, marker != 0xCC { frames += 1 }
            if marker == 0xDA { scanHeaders += 1 }
            segment = (marker, at, 0)
            state = .length(high: nil)
        }
    }

    /// A fault: a phone shows part of the picture when a scan's data had begun, else nothing.
    private func damage(_ detail: String) -> MediaStructure.Verdict {
        scans > 0 ? .showsPart("the JPEG is damaged: \(detail)") : .showsNothing("the JPEG is damaged: \(detail)")
    }

    var verdict: MediaStructure.Verdict {
        var ended = self
        ended.scanData(before: offset)
        return ended.verdictAtEnd
    }

    private var verdictAtEnd: MediaStructure.Verdict {
        switch state {
        case .end: return .whole
        case .broken(let verdict): return verdict
        case .start: return .showsNothing("the JPEG is cut short at byte \(offset), in its start-of-image marker")
        case .length, .segment:
            let inside =
                "inside its marker segment FF \(segment.marker.hexDigits) at byte \(segment.start)"
                + (segment.length > 0 ? ", which declares \(segment.length) bytes" : "")
            if scans == 0 {
                return .showsNothing(
                    "the JPEG is cut short at byte \(offset), \(inside), before any scan data: no picture")
            }
            return .showsPart("the JPEG is cut short: no end-of-image marker; its \(offset) bytes end \(inside)")
        case .marker:
            if scans == 0 {
                return .showsNothing("the JPEG is cut short at byte \(offset), before any scan data: no picture")
            }
            return .showsPart("the JPEG is cut short: no end-of-image marker in its \(offset) bytes")
        }
    }

    /// The index of the next 0xFF in `bytes` from `index`, or nil.
    private static func nextFF(_ bytes: UnsafeRawBufferPointer, from index: Int) -> Int? {
        guard let base = bytes.baseAddress, index < bytes.count,
            let found = memchr(base + index, 0xFF, bytes.count - index)
        else { return nil }
        return UnsafeRawPointer(found) - base
    }
}
