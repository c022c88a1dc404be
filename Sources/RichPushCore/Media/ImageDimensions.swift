/// An image's width and height read from its first bytes, for the types whose header says them early: PNG (the
/// IHDR chunk, bytes 16 to 24), JPEG (the first start-of-frame segment, after any EXIF or ICC segments that fit
/// in the bytes given) and BMP (its info header). Lets the transformation step pass a JPEG or PNG that needs nothing
/// through without decoding anything or leaving the caller's thread, and refuse a BMP over the pixel limit before
/// ImageMagick's BMP coder, which decodes the whole image to say its size. Nil when the bytes do not say (a GIF's
/// frames are counted by the converter instead).
package enum ImageDimensions {
    package static func parse(_ head: [UInt8], type: MediaType) -> ImageSize? {
        switch type {
        case .png: return png(head)
        case .jpeg: return jpeg(head)
        case .bmp: return bmp(head)
        default: return nil
        }
    }

    /// A BMP's size as ImageMagick's coder reads it: after the 14-byte file header (`BM`), the info header's size,
    /// then a 12-byte core header's 16-bit width and height, or a larger header's (40 bytes or more) 32-bit ones,
    /// little-endian, the height negative for rows stored top-down. Nil for any other start, a header size between,
    /// or a width or height that is not above 0 (ImageMagick refuses those too).
    package static func bmp(_ head: [UInt8]) -> ImageSize? {
        guard head.count >= 26, head[0] == UInt8(ascii: "B"), head[1] == UInt8(ascii: "M") else { return nil }
        let little = { littleEndian(head, at: $0, count: $1) }
        let headerSize = little(14, 4)
        let width: Int
        let height: Int
        if headerSize == 12 {
            width = Int(Int16(truncatingIfNeeded: little(18, 2)))
            height = Int(Int16(truncatingIfNeeded: little(20, 2)))
        } else if headerSize >= 40 {
            width = Int(Int32(bitPattern: little(18, 4)))
            height = abs(Int(Int32(bitPattern: little(22, 4))))
        } else {
            return nil
        }
        guard width > 0, height > 0 else { return nil }
        return ImageSize(width: width, height: height)
    }

    /// The `count` bytes of `bytes` at `offset`, little-endian (a BMP's fields).
    package static func littleEndian(_ bytes: [UInt8], at offset: Int, count: Int) -> UInt32 {
        bytes[offset..<(offset + count)].reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    private static func bigEndian(_ bytes: ArraySlice<UInt8>) -> Int {
        bytes.reduce(0) { $0 << 8 | Int($1) }
    }

    package static func png(_ head: [UInt8]) -> ImageSize? {
        guard head.count >= 24, head[12..<16].elementsEqual("IHDR".utf8) else { return nil }
        return ImageSize(width: bigEndian(head[16..<20]), height: bigEndian(head[20..<24]))
    }

    package static func jpeg(_ head: [UInt8]) -> ImageSize? {
        var size: ImageSize?
        walkJPEG(head) { marker, data in
            // Start of frame: every SOFn but DHT (C4), JPG (C8) and DAC (CC).
            guard (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) else { return true }
            if data.count >= 5 {
                size = ImageSize(
                    width: bigEndian(head[(data.lowerBound + 3)..<(data.lowerBound + 5)]),
                    height: bigEndian(head[(data.lowerBound + 1)..<(data.lowerBound + 3)]))
            }
            return false
        }
        return size
    }

    /// Walks the marker segments of a JPEG's first bytes up to its first scan, handing `body` each one's marker and
    /// where its data lies in `head` (cut where `head` ends), until `body` returns false. Returns the marker the walk
    /// ended at, start of scan (DA) or end of image (D9), else nil: `body` stopped it, or the bytes ended or are not
    /// a JPEG's.
    @discardableResult
    package static func walkJPEG(_ head: [UInt8], _ body: (UInt8, Range<Int>) -> Bool) -> UInt8? {
        guard head.count >= 4, head[0] == 0xFF, head[1] == 0xD8 else { return nil }
        var index = 2
        while index + 4 <= head.count {
            guard head[index] == 0xFF else { return nil }
            let marker = head[index + 1]
            // Fill bytes, and markers without a length.
            if marker == 0xFF {
                index += 1
                continue
            }
            if marker == 0x01 || (0xD0...0xD8).contains(marker) {
                index += 2
                continue
            }
            if marker == 0xDA || marker == 0xD9 { return marker }
            let length = bigEndian(head[(index + 2)..<(index + 4)])
            guard length >= 2, body(marker, (index + 4)..<min(head.count, index + 2 + length)) else { return nil }
            index += 2 + length
        }
        return nil
    }
}
