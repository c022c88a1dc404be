import RichPushCore

/// What a JPEG's or PNG's bytes carry beside the picture, read from its segments or chunks without decoding a
/// pixel: its EXIF orientation, the metadata it holds, and whether a PNG is an APNG. What an Android variant must not
/// have (`AndroidVariant`): FCM's Android code decodes with `BitmapFactory`, which ignores the EXIF orientation (a
/// photo taken upright shows sideways) and an APNG's animation, and metadata (a GPS position above all) is stripped.
struct ImageMetadata: Sendable, Hashable {
    /// The EXIF orientation (1 to 8), when the file has one.
    var orientation: Int?
    /// The kinds of metadata held, named for a person, each once, in the order found ("EXIF", "XMP", "a comment").
    var kinds: [String] = []
    /// An APNG: an acTL chunk before the first IDAT.
    var animated = false
    /// Whether the walk reached the picture (a JPEG's first scan, a PNG's IEND): else what is beyond is unknown.
    var complete = false

    /// Not metadata, though a PNG filter drops them (`PNGChunks`): how the pixels are laid out or drawn, saying
    /// nothing about who made the picture, where or when.
    static let pngHints: Set<String> = ["pHYs", "bKGD", "sPLT", "hIST"]

    /// What `bytes` (a file of `type`, from its first byte; a JPEG up to its first scan is enough) hold; nil for
    /// another type, or bytes that are not one.
    static func read(_ bytes: [UInt8], type: MediaType) -> ImageMetadata? {
        switch type {
        case .jpeg: return jpeg(bytes)
        case .png: return png(bytes)
        default: return nil
        }
    }

    private mutating func add(_ kind: String) {
        if !kinds.contains(kind) { kinds.append(kind) }
    }

    /// A JPEG's marker segments up to its first scan (SOS): metadata lives there. Kept as not metadata: JFIF (APP0),
    /// an ICC profile (APP2, how the colours look) and Adobe's colour transform (APP14).
    private static func jpeg(_ bytes: [UInt8]) -> ImageMetadata? {
        guard bytes.starts(with: [0xFF, 0xD8]) else { return nil }
        var found = ImageMetadata()
        let end = ImageDimensions.walkJPEG(bytes) { marker, range in
            let data = bytes[range]
            switch marker {
            case 0xE1 where data.starts(with: Array("Exif\0\0".utf8)):
                found.add("EXIF")
                if let orientation = PNGChunks.orientation(exif: data.dropFirst(6)) {
                    found.orientation = orientation
                }
            case 0xE1 where data.starts(with: Array("http://ns.adobe.com/xap/1.0/".utf8)):
                found.add("XMP")
            case 0xED:
                found.add("IPTC (APP13)")
            case 0xFE:
                found.add("a comment")
            case _ where JPEGSegments.isMetadata(marker):
                found.add("APP\(marker - 0xE0) data")
            default:
                break
            }
            return true
        }
        found.complete = end == 0xDA
        return found
    }

    /// A PNG's chunks, their headers walked to IEND (text chunks may follow the image data).
    private static func png(_ bytes: [UInt8]) -> ImageMetadata? {
        guard bytes.starts(with: PNGChunks.signature) else { return nil }
        var found = ImageMetadata()
        var offset = PNGChunks.signature.count
        var sawIDAT = false
        while bytes.count - offset >= 8 {
            let length = PNGChunks.bigEndian(bytes[offset..<(offset + 4)])
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            switch type {
            case "IEND":
                found.complete = true
                return found
            case "IDAT":
                sawIDAT = true
            case "acTL" where !sawIDAT:
                found.animated = true
            case "eXIf":
                found.add("EXIF")
                let data = bytes[min(bytes.count, offset + 8)..<min(bytes.count, offset + 8 + length)]
                if let orientation = PNGChunks.orientation(exif: data) { found.orientation = orientation }
            case "tEXt", "zTXt", "iTXt":
                found.add("text")
            case "tIME":
                found.add("a time stamp")
            case _ where PNGChunks.kept.contains(type) || pngHints.contains(type):
                break
            default:
                found.add("a \(type) chunk")
            }
            offset += 12 + length
        }
        return found
    }
}
