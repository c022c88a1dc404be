/// A PNG file as its chunks, walked without decoding a pixel: what `--strip-metadata` does to a PNG. The chunks
/// that make the picture are copied byte for byte (every frame of an APNG with them), the rest dropped, so a
/// PNG loses its text, EXIF and time stamps without being re-encoded: an animation stays an animation, a palette
/// stays a palette, and no pixel changes.
///
/// Kept: the critical chunks (IHDR, PLTE, IDAT, IEND), APNG's (acTL, fcTL, fdAT), and those that change how the
/// pixels look: transparency (tRNS) and colour (gAMA, cHRM, sRGB, iCCP, sBIT, cICP, mDCv, cLLi). An EXIF
/// orientation other than 1 is kept as a new eXIf chunk holding it alone (a viewer that honours it shows the
/// picture as it showed the original; the rest of the EXIF, a GPS position above all, goes). Everything else
/// goes: tEXt, zTXt, iTXt (never decompressed), eXIf, tIME, pHYs, bKGD, private chunks, and any bytes after IEND.
struct PNGChunks {
    /// One chunk: its type and where its data lies in the file.
    struct Chunk {
        var type: String
        /// The whole chunk: length, type, data and CRC.
        var whole: Range<Int>
        var data: Range<Int>
    }

    /// Why the bytes are not a whole PNG: the detail of a `damaged-image` refusal.
    struct Damage: Error {
        var detail: String
    }

    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    static let kept: Set<String> = [
        "IHDR", "PLTE", "IDAT", "IEND", "acTL", "fcTL", "fdAT", "tRNS", "gAMA", "cHRM", "sRGB", "iCCP", "sBIT", "cICP",
        "mDCv", "cLLi",
    ]

    let bytes: [UInt8]
    /// Every chunk up to IEND, in order.
    let chunks: [Chunk]

    /// Walks `bytes`, checking the structure and the CRC of every chunk that is kept.
    /// - Throws: `Damage` when the signature, a length, a CRC, IHDR first, an IDAT or IEND is wrong or missing.
    init(_ bytes: [UInt8]) throws(Damage) {
        guard bytes.starts(with: Self.signature) else { throw Damage(detail: "the PNG signature is missing") }
        var chunks: [Chunk] = []
        var offset = Self.signature.count
        while chunks.last?.type != "IEND" {
            guard bytes.count - offset >= 12 else {
                throw Damage(detail: "the PNG is cut short at byte \(offset) of \(bytes.count): no IEND chunk")
            }
            let length = Self.bigEndian(bytes[offset..<(offset + 4)])
            let typeBytes = bytes[(offset + 4)..<(offset + 8)]
            guard typeBytes.allSatisfy({ (0x41...0x5A).contains($0 & ~0x20) }) else {
                throw Damage(detail: "the PNG has no valid chunk at byte \(offset)")
            }
            let type = String(decoding: typeBytes, as: UTF8.self)
            guard length <= bytes.count - offset - 12 else {
                throw Damage(
                    detail:
                        "the PNG is cut short: its \(type) chunk at byte \(offset) declares \(length) bytes, "
                        + "\(bytes.count - offset - 12) remain"
                )
            }
            let chunk = Chunk(
                type: type, whole: offset..<(offset + 12 + length), data: (offset + 8)..<(offset + 8 + length))
            if Self.kept.contains(type) {
                let stored = UInt32(Self.bigEndian(bytes[chunk.data.upperBound..<chunk.whole.upperBound]))
                guard CRC32.of(bytes[(offset + 4)..<chunk.data.upperBound]) == stored else {
                    throw Damage(detail: "the PNG's \(type) chunk at byte \(offset) fails its CRC")
                }
            }
            if chunks.isEmpty, type != "IHDR" { throw Damage(detail: "the PNG does not start with IHDR") }
            chunks.append(chunk)
            offset = chunk.whole.upperBound
        }
        guard chunks.contains(where: { $0.type == "IDAT" }) else { throw Damage(detail: "the PNG has no IDAT chunk") }
        self.bytes = bytes
        self.chunks = chunks
    }

    /// Whether it is an APNG: an acTL chunk before the first IDAT (after it, decoders ignore it).
    var isAnimated: Bool {
        for chunk in chunks {
            if chunk.type == "acTL" { return true }
            if chunk.type == "IDAT" { return false }
        }
        return false
    }

    /// The file with only the kept chunks (and an eXIf holding the orientation alone, when it is not 1).
    func stripped() -> [UInt8] {
        var out = Self.signature
        out.reserveCapacity(bytes.count)
        for chunk in chunks {
            if Self.kept.contains(chunk.type) {
                out += bytes[chunk.whole]
            } else if chunk.type == "eXIf", let orientation = Self.orientation(exif: bytes[chunk.data]),
                orientation != 1
            {
                out += Self.chunk("eXIf", Self.exif(orientation: orientation))
            }
        }
        return out
    }

    /// The orientation (tag 0x0112 of IFD0) an EXIF block holds, or nil.
    static func orientation(exif: ArraySlice<UInt8>) -> Int? {
        let tiff = Array(exif)
        guard tiff.count >= 8 else { return nil }
        let little: Bool
        switch (tiff[0], tiff[1]) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return nil
        }
        func number(_ at: Int, _ size: Int) -> Int? {
            guard at >= 0, at + size <= tiff.count else { return nil }
            let field = tiff[at..<(at + size)]
            return little ? field.reversed().reduce(0) { $0 << 8 | Int($1) } : bigEndian(field)
        }
        guard let ifd = number(4, 4), let count = number(ifd, 2) else { return nil }
        for entry in 0..<count {
            let at = ifd + 2 + entry * 12
            guard let tag = number(at, 2) else { return nil }
            if tag == 0x0112, number(at + 2, 2) == 3 { return number(at + 8, 2) }
        }
        return nil
    }

    /// A big-endian EXIF block holding one tag: the orientation.
    static func exif(orientation: Int) -> [UInt8] {
        // "MM", 42, IFD0 at 8; one entry: tag 0x0112, SHORT, count 1, the value left-justified; no next IFD.
        [
            0x4D, 0x4D, 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, UInt8(orientation & 0xFF), 0, 0, 0, 0,
            0, 0,
        ]
    }

    /// A chunk of `type` holding `data`, its CRC computed.
    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        return bytes(of: UInt32(data.count)) + body + bytes(of: CRC32.of(body[...]))
    }

    private static func bytes(of value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    static func bigEndian(_ bytes: ArraySlice<UInt8>) -> Int {
        bytes.reduce(0) { $0 << 8 | Int($1) }
    }
}

extension PNGChunks {
    /// Whether the first bytes of a PNG make it an APNG (an acTL chunk before the first IDAT), walking the chunk
    /// headers only.
    static func isAnimated(head: [UInt8]) -> Bool {
        guard head.starts(with: signature) else { return false }
        var offset = signature.count
        while head.count - offset >= 8 {
            let length = bigEndian(head[offset..<(offset + 4)])
            switch String(decoding: head[(offset + 4)..<(offset + 8)], as: UTF8.self) {
            case "acTL": return true
            case "IDAT", "IEND": return false
            default: offset += 12 + length
            }
        }
        return false
    }
}
