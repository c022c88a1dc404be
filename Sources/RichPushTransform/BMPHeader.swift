import RichPushCore

/// What a BMP's header says about alpha. ImageMagick (6.9.11, the BMP coder libvips 8.14 reads BMP through) takes
/// the fourth byte of a 32-bit BI_RGB pixel as alpha whenever one of them is not zero, though Microsoft's format
/// says that byte is unused: such files came out partly transparent. Alpha is real only where the header declares
/// it: an alpha mask (BITMAPV3INFOHEADER and later, or BI_ALPHABITFIELDS) that is not zero, with bit fields.
enum BMPHeader {
    /// Whether the BMP starting with `head` (its first 70 bytes at least) has a real alpha channel.
    static func hasAlpha(_ head: [UInt8]) -> Bool {
        guard head.count >= 70, head[0] == UInt8(ascii: "B"), head[1] == UInt8(ascii: "M") else { return false }
        let little = { ImageDimensions.littleEndian(head, at: $0, count: $1) }
        let headerSize = little(14, 4)
        let compression = little(30, 4)
        // BI_BITFIELDS (3) with a header that has an alpha mask field (56 bytes or more), or BI_ALPHABITFIELDS (6),
        // whose four masks follow a 40-byte header: either way the alpha mask is at byte 66.
        let bitFields = (compression == 3 && headerSize >= 56) || compression == 6
        return bitFields && little(66, 4) != 0
    }
}
