import FixtureOrigin
import Foundation
import RichPushCore
import RichPushTestSupport
import Testing

@testable import RichPushMedia
@testable import RichPushTransform

/// How `VipsConverter` decodes: only with the decoder of the type libmagic decided, on files the tests write.
extension TransformTests {
    func write(_ bytes: [UInt8], _ name: String) throws -> String {
        let path = directory + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The failure converting `path` (as `type`) to `format`; records an issue when it converts.
    func failure(_ path: String, type: MediaType? = nil, as format: MediaType = .jpeg) -> TransformFailure? {
        do {
            let size = try convert(path, type: type, to: UUID().uuidString, as: format)
            Issue.record("\(path) converted, \(size)")
            return nil
        } catch {
            return error
        }
    }

    @Test("an SVG that begins with a UTF-8 byte-order mark is an SVG, and libvips renders it, mark and all")
    func svgWithByteOrderMark() throws {
        let svg =
            #"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>"#
        for text in [svg, #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n" + svg] {
            let marked = Sniffer.byteOrderMark + Array(text.utf8)
            guard case .convertible(.svg, _) = try Sniffer().sniff(marked) else {
                Issue.record("libmagic does not call it SVG: \(try Sniffer().sniff(marked))")
                continue
            }
            let source = directory + "/marked-\(UUID().uuidString).svg"
            try Data(marked).write(to: URL(fileURLWithPath: source))
            let converted = try convert(source, type: .svg, to: UUID().uuidString + ".png", as: .png)
            #expect(converted.width == 10, "\(converted)")
        }
        // Text after a mark that is no SVG is still named and refused.
        guard case .unsupported(let named) = try Sniffer().sniff(Sniffer.byteOrderMark + Array("hello\n".utf8)) else {
            Issue.record("plain text after a mark was not refused")
            return
        }
        #expect(named.hasPrefix("text/plain"), "\(named)")
    }

    @Test(
        """
        an SVG whose <svg> comes after 3 KB is libmagic's SVG and libvips's svgload's: ImageMagick never opens the \
        file it names
        """
    )
    func lateSVG() async throws {
        let late = ImageWriters.lateSVG()
        guard case .convertible(.svg, _) = try Sniffer().sniff(late) else {
            Issue.record("libmagic does not call it SVG: \(try Sniffer().sniff(late))")
            return
        }
        // A FIFO: opening it blocks until a writer comes, so a decoder that tried (ImageMagick's SVG coder did,
        // reading the header) would never finish.
        let trap = directory + "/trap.png"
        #expect(mkfifo(trap, 0o600) == 0)
        let image = #"<image href="\#(trap)" width="10" height="10"/>"#
        let referencing = try await convertBounded(
            String(decoding: ImageWriters.lateSVG(content: image), as: UTF8.self), trap: trap)
        guard case .failure(let refused) = referencing else {
            Issue.record("rendered an SVG naming a local file")
            return
        }
        #expect(refused.detail.contains("external resource"), "\(refused.detail)")
        #expect(!refused.detail.contains(trap), "the detail names the local file: \(refused.detail)")
        // The same document read as a BMP (a type mismatch) is refused by the BMP header check before ImageMagick's
        // BMP coder (the only decoder a BMP goes to), and the FIFO is not opened either.
        // (ImageMagick's SVG coder, given it, failed with "unable to open file" naming the FIFO: it had looked.)
        let asBMP = try await convertBounded(
            String(decoding: ImageWriters.lateSVG(content: image), as: UTF8.self), type: .bmp, trap: trap)
        guard case .failure(let notBMP) = asBMP else {
            Issue.record("rendered an SVG as a BMP")
            return
        }
        #expect(
            notBMP.detail.contains("the BMP's header gives no width and height")
                && !notBMP.detail.contains("unable to open"),
            "\(notBMP.detail)")
        // Without a reference, libvips's own SVG loader renders it, from memory.
        let clean = try write(late, "late.svg")
        #expect(try VipsConverter().probe(clean, type: .svg).loader == "svgload_buffer")
        #expect(try convert(clean, to: "late.png", as: .png) == .init(width: 20, height: 20))
    }

    @Test(
        """
        a file is decoded as the type libmagic decided, whatever its name; a decoder that does not recognise the bytes \
        refuses them
        """
    )
    func typeDecides() throws {
        // A BMP named .svg is read as the BMP it is.
        let bmp = try write(ImageWriters.bmp(width: 4, height: 4, bgra: [0, 0, 255, 0]), "picture.svg")
        #expect(try convert(bmp, type: .bmp, to: "picture.jpg", as: .jpeg) == .init(width: 4, height: 4))
        // Bytes that are not the type said: refused by that type's decoder, which names itself, with no other tried.
        for (path, type, loader) in [
            (Self.media("logo.png"), MediaType.tiff, "tiffload"), (Self.media("photo.jpg"), .webp, "webpload"),
            (Self.media("banner.webp"), .heic, "heifload"), (Self.media("icon.svg"), .png, "pngload"),
            (Self.media("photo.tiff"), .svg, "svgload"),
        ] {
            let refused = try #require(failure(path, type: type), "\(path) as \(type)")
            #expect(
                refused.detail.contains("\(type.mime), but libvips's \(loader) does not recognise them"),
                "\(refused.detail)")
            #expect(throws: TransformFailure.self) { try header(path, type: type) }
        }
    }

    @Test(
        """
        an animated AVIF ('avis') is refused by heifload, which does not recognise it, not sent to ImageMagick's TGA \
        decoder
        """
    )
    func animatedAVIF() throws {
        let animated = Self.media("anim.avif")
        guard case .convertible(.avif, _) = try Sniffer().sniff(fixture("anim.avif")) else {
            Issue.record("libmagic does not call it AVIF: \(try Sniffer().sniff(fixture("anim.avif")))")
            return
        }
        do {
            _ = try header(animated)
            Issue.record("read the header of an AVIF image sequence")
        } catch {
            #expect(
                error.detail.contains("heifload does not recognise them (major brand 'avis', an AVIF image sequence)"),
                "\(error.detail)")
            #expect(
                !error.detail.lowercased().contains("tga") && !error.detail.contains(Self.media("")), "\(error.detail)")
        }
        // A still AVIF is heifload's.
        #expect(try VipsConverter().probe(Self.media("photo.avif"), type: .avif).loader == "heifload")
    }

    /// A BMP whose header gives its size, 4 x 4, and then 238 bits a pixel: ImageMagick's coder refuses it.
    static var brokenBMP: [UInt8] {
        var bytes = ImageWriters.rleBMP(width: 4, height: 4)
        bytes[28] = 0xEE
        return bytes
    }

    @Test("conversions failing side by side each report their own failure: never empty, never a path")
    func failuresAreTheirOwn() async throws {
        // Three broken files, each failing inside libvips with messages of its own: a GIF with no frame (gifload),
        // a TIFF whose separate-plane tiles libvips refuses (tiff2vips), a BMP ImageMagick cannot read (it names
        // the file).
        var gif = fixture("anim.gif").prefix(13)
        gif += [0x2C] + [UInt8](repeating: 0, count: 9) + [8, 3, 0xFF, 0xFF, 0xFF, 0]
        let files: [(path: String, type: MediaType, mark: String)] = [
            (try write(Array(gif), "broken.gif"), .gif, "gif"),
            (
                try write(
                    ImageWriters.tiff([
                        .init(width: 16, height: 16, pixels: ImageWriters.solid(16, 16, [9, 9, 9]), separateTiles: 16)
                    ]),
                    "planes.tiff"), .tiff, "tiff2vips"
            ),
            (try write(Self.brokenBMP, "broken.bmp"), .bmp, "magick"),
        ]
        let rounds = 25
        let details = LockedValue<[Int: [String]]>([:])
        for (index, file) in files.enumerated() {
            Thread {
                for round in 0..<rounds {
                    let detail = failure(file.path, type: file.type, as: .jpeg)?.detail ?? "converted"
                    details.withLock { $0[index, default: []].append(detail) }
                    _ = round
                }
            }.start()
        }
        try await waitUntil("\(files.count) threads to convert \(rounds) times", within: .seconds(120)) {
            details.withLock { $0.values.map(\.count) == Array(repeating: rounds, count: files.count) }
        }
        let rooted = try Regex(#"(^|[^A-Za-z0-9._~/-])/[A-Za-z]"#)
        // A call whose first run was long (over 1 s: a loaded machine) or that found no moment alone says so instead
        // of libvips's message (`attributed` in cvips.c): its own words, never another's; most runs carry the mark.
        let unknown = ["its own message is not kept", "its own message is not known"]
        for (index, file) in files.enumerated() {
            let own = details.withLock { $0[index] ?? [] }
            #expect(
                own.filter { $0.lowercased().contains(file.mark) }.count > rounds / 2, "\(file.path): \(Set(own))")
            for detail in Set(own) {
                #expect(
                    detail.lowercased().contains(file.mark) || unknown.contains { detail.contains($0) },
                    "\(file.path): \(detail)")
                for other in files where other.mark != file.mark {
                    #expect(
                        !detail.lowercased().contains(other.mark), "\(file.path) got another file's failure: \(detail)")
                }
                #expect(!detail.isEmpty && !detail.contains(directory), "\(file.path): \(detail)")
                #expect(detail.firstMatch(of: rooted) == nil, "\(file.path): a path in \(detail)")
            }
        }
    }

    @Test("a TIFF's first page and main image are converted, never a reduced-resolution page")
    func tiffPageZero() async throws {
        let pyramid = try write(
            ImageWriters.tiff([
                .init(width: 64, height: 48, pixels: ImageWriters.solid(64, 48, [220, 0, 0])),
                .init(width: 32, height: 24, pixels: ImageWriters.solid(32, 24, [0, 0, 220]), subfileType: 1),
            ]), "pyramid.tiff")
        #expect(try header(pyramid).width == 64)
        // Pages after the first are never read: no frames of its (the pixel limit counts frames).
        #expect(try header(pyramid).pages == 1)
        let pages = try write(
            ImageWriters.tiff(
                (0..<3).map { _ in .init(width: 64, height: 48, pixels: ImageWriters.solid(64, 48, [0, 200, 0])) }),
            "pages.tiff")
        #expect(try header(pages).pages == 1)
        #expect(try convert(pyramid, to: "pyramid.jpg", as: .jpeg) == .init(width: 64, height: 48))
        let red = try await VipsTool.pixel(directory + "/pyramid.jpg", x: 32, y: 24)
        #expect(red.count == 3 && red[0] > 200 && red[2] < 30, "\(red)")
    }

    @Test("signed TIFF samples are shifted into the unsigned range, not clipped to black", arguments: [8, 16])
    func tiffSigned(bits: Int) async throws {
        // A grey ramp from the lowest signed value to the highest, left to right, in 256 columns and 8 rows.
        let step = 1 << (bits - 8)
        let row = (0..<256).flatMap { column -> [UInt8] in
            let value = (column - 128) * step
            return bits == 8 ? [UInt8(bitPattern: Int8(value))] : [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF)]
        }
        let path = try write(
            ImageWriters.tiff([
                .init(
                    width: 256, height: 8, samples: 1, bits: bits, signed: true,
                    pixels: Array(Array(repeating: row, count: 8).joined()))
            ]),
            "signed\(bits).tiff")
        _ = try convert(path, to: "signed\(bits).jpg", as: .jpeg)
        for (column, expected) in [(2, 2.0), (64, 64), (128, 128), (192, 192), (253, 253)] {
            let value = try await VipsTool.pixel(directory + "/signed\(bits).jpg", x: column, y: 4)
            #expect(value.count == 1 && abs(value[0] - expected) <= 12, "column \(column): \(value), not \(expected)")
        }
    }

    @Test("TIFF layouts libvips 8.14 does not read are refused with a detail that names them")
    func tiffLayouts() throws {
        let planes = try write(
            ImageWriters.tiff([
                .init(width: 16, height: 16, pixels: ImageWriters.solid(16, 16, [9, 9, 9]), separateTiles: 16)
            ]),
            "planes.tiff")
        let tiled = try #require(failure(planes))
        #expect(
            tiled.detail.hasPrefix(
                "the TIFF uses tiles with separate colour planes (PlanarConfiguration 2), which libvips 8.14 does "
                    + "not read"
            ), "\(tiled.detail)")
        let old = try write(
            ImageWriters.tiff([.init(width: 160, height: 120, pixels: [], oldJPEG: fixture("photo.jpg"))]), "old.tiff")
        let ojpeg = try #require(failure(old))
        #expect(
            ojpeg.detail.hasPrefix("the TIFF uses old-style JPEG compression (TIFF compression 6"), "\(ojpeg.detail)")
    }

    @Test(
        """
        a BMP's size is read from its header, never by ImageMagick's coder (it decodes the whole image to say it); \
        a BMP whose header gives none is not decoded
        """)
    func bmpHeaderOnly() throws {
        // 10,000 x 10,000 declared, one row of pixels: ImageMagick would decode (or fail on) the rest first.
        let declared = try write(ImageWriters.rleBMP(width: 10_000, height: 10_000, rows: 1), "declared.bmp")
        let read = try header(declared)
        #expect(read.width == 10_000 && read.height == 10_000 && read.pages == 1 && !read.hasAlpha)
        // A top-down BMP (negative height) and a core header's 16-bit size.
        var topDown = ImageWriters.bmp(width: 3, height: 2, bgra: [0, 0, 255, 0])
        topDown.replaceSubrange(22..<26, with: [0xFE, 0xFF, 0xFF, 0xFF])
        #expect(try header(write(topDown, "top-down.bmp")).height == 2)
        let core = Array("BM".utf8) + [UInt8](repeating: 0, count: 12) + [12, 0, 0, 0, 0x10, 0x27, 0x20, 0x4E]
        let coreHeader = try header(write(core + [UInt8](repeating: 0, count: 40), "core.bmp"))
        #expect(coreHeader.width == 10_000 && coreHeader.height == 20_000)
        for (name, bytes) in [
            ("garbage.bmp", Array("BM".utf8) + [UInt8](repeating: 0xEE, count: 200)),
            (
                "short-header.bmp",
                Array("BM".utf8) + [UInt8](repeating: 0, count: 12) + [20, 0, 0, 0] + [UInt8](repeating: 1, count: 60)
            ),
            ("zero-width.bmp", ImageWriters.rleBMP(width: 0, height: 4)),
            ("array.bmp", Array("BA".utf8) + ImageWriters.rleBMP(width: 4, height: 4).dropFirst(2)),
        ] {
            let path = try write(bytes, name)
            let refused = failure(path, type: .bmp)
            #expect(refused?.detail.contains("the BMP's header gives no width and height") == true, "\(name)")
            #expect(throws: TransformFailure.self, "\(name)") { try header(path, type: .bmp) }
        }
    }

    @Test(
        """
        a BMP ImageMagick's policy holds in memory converts; one that needs more is refused, never kept on disk \
        (ImageMagick's pixel cache in /tmp outlived a process ending in the middle of its read)
        """)
    func bmpNeverOnDisk() throws {
        let small = try write(ImageWriters.rleBMP(width: 1_000, height: 1_000), "small.bmp")
        #expect(try convert(small, to: "small.jpg", as: .jpeg) == .init(width: 1_000, height: 1_000))
        func cacheFiles() -> Set<String> {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []
            return Set(names.filter { $0.hasPrefix("magick-") })
        }
        let before = cacheFiles()
        // 49 megapixels, under the default pixel limit: 392 MB of ImageMagick's 16-bit pixels, over Debian's policy
        // of 256 MiB in memory (it then went to a 1 GiB file in /tmp).
        let large = try write(ImageWriters.rleBMP(width: 7_000, height: 7_000), "large.bmp")
        let refused = try #require(failure(large))
        #expect(refused.code == .transformFailed)
        #expect(
            refused.detail.hasPrefix("the BMP's 7000 x 7000 pixels need more memory than ImageMagick's policy"),
            "\(refused.detail)")
        #expect(cacheFiles().subtracting(before).isEmpty, "ImageMagick kept pixels in /tmp")
    }

    @Test("a 32-bit BI_RGB BMP is opaque whatever its unused byte holds; one whose header declares alpha keeps it")
    func bmpAlpha() async throws {
        let media = directory + "/media"
        try FileManager.default.createDirectory(atPath: media, withIntermediateDirectories: true)
        // Red, with 0x7F in the byte Microsoft's BI_RGB leaves unused: ImageMagick took it for alpha.
        try Data(ImageWriters.bmp(width: 8, height: 8, bgra: [0, 0, 255, 0x7F])).write(
            to: URL(fileURLWithPath: media + "/unused.bmp"))
        try Data(ImageWriters.bmp(width: 8, height: 8, bgra: [0, 0, 255, 0x80], alphaMask: 0xFF00_0000))
            .write(to: URL(fileURLWithPath: media + "/alpha.bmp"))
        #expect(try header(media + "/unused.bmp").hasAlpha == false)
        #expect(try header(media + "/alpha.bmp").hasAlpha)
        // Converted as the step converts them: the opaque one to JPEG, the one with alpha to PNG (the step's choice
        // from `hasAlpha`, checked through the engine in TransformStepTests).
        #expect(
            try convert(media + "/unused.bmp", type: .bmp, to: "unused.jpg", as: .jpeg) == .init(width: 8, height: 8))
        let red = try await VipsTool.pixel(directory + "/unused.jpg", x: 4, y: 4)
        #expect(red.count == 3 && red[0] > 240 && red[1] < 20 && red[2] < 20, "flattened onto white: \(red)")
        #expect(try convert(media + "/alpha.bmp", type: .bmp, to: "alpha.png", as: .png) == .init(width: 8, height: 8))
        let pixel = try await VipsTool.pixel(directory + "/alpha.png", x: 4, y: 4)
        #expect(pixel.count == 4 && abs(pixel[3] - 128) <= 1 && pixel[0] > 240, "\(pixel)")
    }
}
