import Foundation

/// Image files written byte by byte, so that a test holds exactly the layout it is about (a TIFF's pages, signed
/// samples, tiles with separate planes; a BMP's header and its unused byte), with no tool to install.
package enum ImageWriters {
    /// The HEIF file `bytes` with every `ispe` property (the size libvips reads) saying `width` x `height`, its coded
    /// frames left as they are.
    package static func heif(_ bytes: [UInt8], ispe width: UInt32, _ height: UInt32) -> [UInt8] {
        var patched = bytes
        let marker = Array("ispe".utf8)
        for index in 0..<max(0, patched.count - 16) where Array(patched[index..<(index + 4)]) == marker {
            for (offset, value) in [(8, width), (12, height)] {
                for byte in 0..<4 {
                    patched[index + offset + byte] = UInt8(truncatingIfNeeded: value >> (24 - 8 * byte))
                }
            }
        }
        return patched
    }

    /// The HEIF file `bytes` with a `free` box of `padding` bytes (at least 8) added at the end of its `meta` box, and
    /// the item locations (`iloc`, versions 0 to 2) moved by as much: the same image, its `meta` box that much longer.
    package static func heif(_ bytes: [UInt8], metaPadding padding: Int) -> [UInt8] {
        func integer(_ at: Int, _ count: Int) -> Int { bytes[at..<(at + count)].reduce(0) { $0 << 8 | Int($1) } }
        func be32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
        var meta = 0
        while integer(meta + 4, 4) != 0x6D65_7461 { meta += integer(meta, 4) }
        let metaEnd = meta + integer(meta, 4)
        var patched = bytes
        var iloc = meta + 12
        while integer(iloc + 4, 4) != 0x696C_6F63 { iloc += integer(iloc, 4) }
        // Each location's offsets: a base offset when the file has them, else each extent's.
        let version = integer(iloc + 8, 1)
        let sizes = (offset: bytes[iloc + 12] >> 4, length: bytes[iloc + 12] & 15, base: bytes[iloc + 13] >> 4)
        let indexSize = version == 0 ? 0 : Int(bytes[iloc + 13] & 15)
        let idSize = version == 2 ? 4 : 2
        var at = iloc + 14
        let count = integer(at, version == 2 ? 4 : 2)
        at += version == 2 ? 4 : 2
        func move(_ field: Int, _ size: UInt8) {
            let moved = integer(field, Int(size)) + padding
            for byte in 0..<Int(size) {
                patched[field + byte] = UInt8(truncatingIfNeeded: moved >> (8 * (Int(size) - 1 - byte)))
            }
        }
        for _ in 0..<count {
            // Data in the file (construction method 0) moves; in `idat` (1) it moves with the box.
            let inFile = version == 0 || integer(at + idSize, 2) & 15 == 0
            at += idSize + (version == 0 ? 0 : 2) + 2
            if inFile, sizes.base > 0 { move(at, sizes.base) }
            at += Int(sizes.base)
            let extents = integer(at, 2)
            at += 2
            for _ in 0..<extents {
                at += indexSize
                if inFile, sizes.base == 0 { move(at, sizes.offset) }
                at += Int(sizes.offset) + Int(sizes.length)
            }
        }
        let free = be32(padding) + Array("free".utf8) + [UInt8](repeating: 0, count: padding - 8)
        patched.replaceSubrange(meta..<(meta + 4), with: be32(metaEnd - meta + padding))
        patched.insert(contentsOf: free, at: metaEnd)
        return patched
    }

    // MARK: TIFF

    /// One directory (page) of a TIFF.
    package struct TIFFPage {
        package var width: Int
        package var height: Int
        package var samples = 3
        package var bits = 8
        /// SampleFormat 2 (two's complement) rather than 1.
        package var signed = false
        /// Interleaved samples, `width * height * samples * bits / 8` bytes, little-endian.
        package var pixels: [UInt8]
        /// NewSubfileType: 1 for a reduced-resolution image.
        package var subfileType = 0
        /// Tiles of this size with each sample in a plane of its own (PlanarConfiguration 2), rather than strips.
        package var separateTiles: Int? = nil
        /// Old-style JPEG (compression 6): this JPEG stream is the image (JPEGInterchangeFormat).
        package var oldJPEG: [UInt8]? = nil

        /// A page; the defaults are an 8-bit RGB strip image.
        package init(
            width: Int, height: Int, samples: Int = 3, bits: Int = 8, signed: Bool = false, pixels: [UInt8],
            subfileType: Int = 0, separateTiles: Int? = nil, oldJPEG: [UInt8]? = nil
        ) {
            self.width = width
            self.height = height
            self.samples = samples
            self.bits = bits
            self.signed = signed
            self.pixels = pixels
            self.subfileType = subfileType
            self.separateTiles = separateTiles
            self.oldJPEG = oldJPEG
        }
    }

    /// A little-endian classic TIFF of `pages`, uncompressed unless a page says otherwise.
    package static func tiff(_ pages: [TIFFPage]) -> [UInt8] {
        var file: [UInt8] = Array("II".utf8) + le16(42) + le32(0)
        var previousNext = 4  // where the offset of the next directory goes
        for page in pages {
            var entries: [(tag: Int, type: Int, values: [Int])] = [
                (254, 4, [page.subfileType]), (256, 4, [page.width]), (257, 4, [page.height]),
                (258, 3, Array(repeating: page.bits, count: page.samples)),
                (262, 3, [page.samples >= 3 ? 2 : 1]), (277, 3, [page.samples]),
                (339, 3, Array(repeating: page.signed ? 2 : 1, count: page.samples)),
            ]
            if let jpeg = page.oldJPEG {
                let offset = file.count
                file += jpeg
                if file.count % 2 == 1 { file.append(0) }
                entries[4] = (262, 3, [6])  // YCbCr
                entries += [
                    (259, 3, [6]), (273, 4, [offset]), (278, 4, [page.height]), (279, 4, [jpeg.count]),
                    (513, 4, [offset]), (514, 4, [jpeg.count]), (530, 3, [2, 2]),
                ]
            } else if let tile = page.separateTiles {
                // One tile per plane when the image fits one tile, as the tests' images do.
                precondition(page.width <= tile && page.height <= tile)
                var offsets: [Int] = []
                let planeBytes = tile * tile * page.bits / 8
                for plane in 0..<page.samples {
                    offsets.append(file.count)
                    var bytes = [UInt8](repeating: 0, count: planeBytes)
                    for y in 0..<page.height {
                        for x in 0..<page.width {
                            bytes[y * tile + x] = page.pixels[(y * page.width + x) * page.samples + plane]
                        }
                    }
                    file += bytes
                }
                entries += [
                    (259, 3, [1]), (284, 3, [2]), (322, 3, [tile]), (323, 3, [tile]), (324, 4, offsets),
                    (325, 4, Array(repeating: planeBytes, count: page.samples)),
                ]
            } else {
                let offset = file.count
                file += page.pixels
                if file.count % 2 == 1 { file.append(0) }
                entries += [(259, 3, [1]), (273, 4, [offset]), (278, 4, [page.height]), (279, 4, [page.pixels.count])]
            }
            entries.sort { $0.tag < $1.tag }
            // Values longer than four bytes go after the directory.
            let directory = file.count
            let extraStart = directory + 2 + entries.count * 12 + 4
            var extra: [UInt8] = []
            var table = le16(entries.count)
            for entry in entries {
                let bytes = entry.values.flatMap { entry.type == 3 ? le16($0) : le32($0) }
                table += le16(entry.tag) + le16(entry.type) + le32(entry.values.count)
                if bytes.count <= 4 {
                    table += bytes + [UInt8](repeating: 0, count: 4 - bytes.count)
                } else {
                    table += le32(extraStart + extra.count)
                    extra += bytes
                }
            }
            let next = directory + table.count
            file += table + le32(0) + extra
            file.replaceSubrange(previousNext..<(previousNext + 4), with: le32(directory))
            previousNext = next
        }
        return file
    }

    // MARK: PPM

    /// A binary PPM (P6) of `width` x `height` RGB pixels (`pixels`, row by row): an input libvips's own tool reads
    /// (`VipsTool.run`), to write JPEGs and PNGs of a chosen size without a fixture.
    package static func ppm(width: Int, height: Int, pixels: [UInt8]) -> [UInt8] {
        precondition(pixels.count == width * height * 3)
        return Array("P6\n\(width) \(height)\n255\n".utf8) + pixels
    }

    /// `count` bytes of seeded noise: a JPEG of it is as large as a photo of its size gets (1.9 bytes a pixel at
    /// quality 90, measured with libvips 8.14).
    package static func noise(_ count: Int, seed: UInt64) -> [UInt8] {
        var generator = SplitMix64(seed: seed)
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { buffer in
            var index = 0
            while index < count {
                var word = generator.next()
                for _ in 0..<min(8, count - index) {
                    buffer[index] = UInt8(truncatingIfNeeded: word)
                    word >>= 8
                    index += 1
                }
            }
        }
        return bytes
    }

    /// `width` x `height` pixels of one colour (RGB).
    package static func solid(_ width: Int, _ height: Int, _ rgb: [UInt8]) -> [UInt8] {
        Array((0..<(width * height)).map { _ in rgb }.joined())
    }

    // MARK: BMP

    /// A 32-bit BMP of `width` x `height` pixels, each `bgra` (blue, green, red, then the fourth byte). With
    /// `alphaMask`, a BITMAPV5HEADER with BI_BITFIELDS and that alpha mask; without, a BITMAPINFOHEADER with BI_RGB,
    /// whose fourth byte Microsoft's format leaves unused.
    package static func bmp(width: Int, height: Int, bgra: [UInt8], alphaMask: UInt32? = nil) -> [UInt8] {
        let pixels = Array((0..<(width * height)).map { _ in bgra }.joined())
        var info: [UInt8]
        if let alphaMask {
            info =
                le32(124) + le32(width) + le32(height) + le16(1) + le16(32) + le32(3) + le32(pixels.count)
                + le32(2835) + le32(2835) + le32(0) + le32(0)
            info += le32(0x00FF_0000) + le32(0x0000_FF00) + le32(0x0000_00FF) + le32(Int(alphaMask))
            info += Array("BGRs".utf8)  // LCS_sRGB (0x73524742), little-endian
            info += [UInt8](repeating: 0, count: 36 + 12) + le32(4) + le32(0) + le32(0) + le32(0)
        } else {
            info =
                le32(40) + le32(width) + le32(height) + le16(1) + le16(32) + le32(0) + le32(pixels.count)
                + le32(2835) + le32(2835) + le32(0) + le32(0)
        }
        let offset = 14 + info.count
        return Array("BM".utf8) + le32(offset + pixels.count) + le32(0) + le32(offset) + info + pixels
    }

    /// An 8-bit run-length-encoded BMP (BI_RLE8) of `width` x `height` pixels of one grey, a few hundred KB for
    /// tens of megapixels; with `rows` fewer than `height`, the pixel data stops after them (the header still
    /// declares `height`).
    package static func rleBMP(width: Int, height: Int, rows: Int? = nil) -> [UInt8] {
        var row: [UInt8] = []
        var left = width
        while left > 0 {
            let run = min(left, 255)
            row += [UInt8(run), 1]
            left -= run
        }
        row += [0, 0]  // end of line
        var pixels = Array(repeating: row, count: rows ?? height).flatMap { $0 }
        pixels += [0, 1]  // end of bitmap
        let palette = [0, 0, 0, 0, 128, 128, 128, 0].map(UInt8.init)
        let info =
            le32(40) + le32(width) + le32(height) + le16(1) + le16(8) + le32(1) + le32(pixels.count)
            + le32(2835) + le32(2835) + le32(2) + le32(0)
        let offset = 14 + info.count + palette.count
        return Array("BM".utf8) + le32(offset + pixels.count) + le32(0) + le32(offset) + info + palette + pixels
    }

    // MARK: SVG

    /// An SVG document whose `<svg>` root comes after `padding` bytes of comment (past the 1,000 bytes libvips's
    /// own SVG sniffer looks at; libmagic still says SVG), drawing a red square of `side` and then `content`.
    package static func lateSVG(padding: Int = 3_100, side: Int = 20, content: String = "") -> [UInt8] {
        let comment = "<!--" + String(repeating: "x", count: padding) + "-->\n"
        return Array(
            """
            <?xml version="1.0"?>
            \(comment)<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" \
            width="\(side)" height="\(side)"><rect width="\(side)" height="\(side)" fill="red"/>\(content)</svg>

            """.utf8)
    }

    private static func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF)] }
    private static func le32(_ value: Int) -> [UInt8] { [0, 8, 16, 24].map { UInt8((value >> $0) & 0xFF) } }
}

/// libvips's own command-line tool (libvips-tools), an independent reader of what the converter wrote.
package enum VipsTool {
    /// Runs `vips` with `arguments` (`jpegsave in.ppm out.jpg --Q 90`, ...), off the cooperative pool.
    /// - Throws: when it exits with another status than 0, with its standard error.
    package static func run(_ arguments: [String]) async throws {
        try await offPool {
            let finished = try ChildProcess.runToEnd("/usr/bin/vips", arguments)
            guard finished.status == 0 else {
                throw VipsToolError(detail: "vips \(arguments.joined(separator: " ")): " + finished.errorsText)
            }
        }
    }

    /// The band values of the pixel at `x`, `y` of the image at `path` (`vips getpoint`).
    package static func pixel(_ path: String, x: Int, y: Int) async throws -> [Double] {
        try await offPool {
            let finished = try ChildProcess.runToEnd(
                "/usr/bin/vips", ["getpoint", path, String(x), String(y)], errors: .discarded)
            return finished.outputText.split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
        }
    }
}

/// `vips` failed.
package struct VipsToolError: Error, CustomStringConvertible {
    package var detail: String
    package var description: String { detail }
}
