/// A JPEG without its metadata, its segments walked without decoding a pixel: what an Android variant of a JPEG
/// whose only fault is its metadata is (`TransformStep`, `Target.android`). The segments that make the picture, and
/// the entropy-coded data of every scan, are copied byte for byte; EXIF and XMP (APP1), IPTC (APP13), comments (COM)
/// and the other application segments are dropped, wherever they are, as is anything after the end-of-image marker.
/// Kept as how the pixels look: JFIF (APP0), an ICC profile (APP2) and Adobe's colour transform (APP14).
enum JPEGSegments {
    /// Whether a segment of `marker` is metadata (`ImageMetadata` names the same ones).
    static func isMetadata(_ marker: UInt8) -> Bool {
        marker == 0xFE || ((0xE1...0xEF).contains(marker) && marker != 0xE2 && marker != 0xEE)
    }

    /// `bytes` without its metadata segments and what follows EOI; nil when its structure cannot be followed from
    /// SOI to EOI (a segment cut short, no EOI): such a file is converted instead.
    static func stripped(_ bytes: [UInt8]) -> [UInt8]? {
        guard bytes.starts(with: [0xFF, 0xD8]) else { return nil }
        var out: [UInt8] = [0xFF, 0xD8]
        out.reserveCapacity(bytes.count)
        var index = 2
        while index + 1 < bytes.count {
            guard bytes[index] == 0xFF else { return nil }
            let marker = bytes[index + 1]
            switch marker {
            case 0xFF:
                // A fill byte before the marker.
                index += 1
                continue
            case 0xD9:
                return out + [0xFF, 0xD9]
            case 0x01, 0xD0...0xD8:
                out += bytes[index..<(index + 2)]
                index += 2
                continue
            default:
                break
            }
            guard index + 4 <= bytes.count else { return nil }
            let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            guard length >= 2, index + 2 + length <= bytes.count else { return nil }
            if !isMetadata(marker) { out += bytes[index..<(index + 2 + length)] }
            index += 2 + length
            guard marker == 0xDA else { continue }
            // A scan's entropy-coded data, up to the next marker that is neither a stuffed 0xFF nor a restart.
            guard let end = scanEnd(bytes, from: index) else { return nil }
            out += bytes[index..<end]
            index = end
        }
        return nil
    }

    /// Where the entropy-coded data that starts at `start` ends (the 0xFF of the next marker), or nil.
    private static func scanEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        while let found = bytes[index...].firstIndex(of: 0xFF), found + 1 < bytes.count {
            let next = bytes[found + 1]
            if next == 0x00 || (0xD0...0xD7).contains(next) || next == 0xFF {
                index = found + (next == 0xFF ? 1 : 2)
                continue
            }
            return found
        }
        return nil
    }
}
