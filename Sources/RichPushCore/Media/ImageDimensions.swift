/// An image's width and height read from its first bytes, for the types whose header says them early: PNG (the
/// IHDR chunk, bytes 16 to 24) and JPEG (the first start-of-frame segment, after any EXIF or ICC segments that fit
/// in the bytes given). Lets the transformation step pass a JPEG or PNG that needs nothing through without
/// decoding anything or leaving the caller's thread. Nil when the bytes do not say (a GIF's frames are counted
/// by the converter instead).
package enum ImageDimensions {
    package static func parse(_ head: [UInt8], type: MediaType) -> ImageSize? {
        switch type {
        case .png: return png(head)
        case .jpeg: return jpeg(head)
        default: return nil
        }
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
