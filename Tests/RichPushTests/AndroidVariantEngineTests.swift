import FixtureOrigin
import Foundation
import Testing

@testable import RichPush
@testable import RichPushMedia
@testable import RichPushTransform

/// Android variants made by the engine from FCM messages against the loopback origin: one download for both
/// platforms, iOS's attachment as iOS takes it, and for Android a still JPEG or PNG within FCM's 1 MiB and the
/// Android bound, upright, without metadata; nothing left on disk but the attachments.
@Suite("Android variants: one FCM message, an attachment per platform", .offPool)
struct AndroidVariantEngineTests {
    /// An FCM message whose `notification.image` (both platforms) is `url`, mutable for iOS.
    static func message(_ url: String) -> PushPayload {
        try! PushPayload(
            parsing: Array(
                #"{"message":{"token":"t","notification":{"image":"\#(url)"},"#
                    .utf8) + Array(#""apns":{"payload":{"aps":{"mutable-content":1}}}}}"#.utf8))
    }

    /// A bed converting with `converter` (libvips by default), serving the fixture media, or `files` (name and
    /// bytes) beside copies of the fixtures named in `fixtures`.
    static func bed(
        files: [String: [UInt8]] = [:], fixtures: [String] = [], converter: (any ImageConverter)? = VipsConverter(),
        _ adjust: (inout Enricher.Configuration) -> Void = { _ in }
    ) throws -> (bed: TestBed, media: String?) {
        var media: String?
        if !files.isEmpty || !fixtures.isEmpty {
            let directory = try temporaryDirectory()
            for (name, bytes) in files { try Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + name)) }
            for name in fixtures {
                try FileManager.default.copyItem(
                    atPath: FixtureRoutes.fixturesDirectory + "/media/" + name, toPath: directory + "/" + name)
            }
            media = directory
        }
        let bed = try TestBed(media: media ?? FixtureRoutes.fixturesDirectory + "/media") { configuration in
            configuration.transform.converter = converter
            adjust(&configuration)
        }
        return (bed, media)
    }

    static func sha256(_ bytes: [UInt8]) -> String {
        let hash = SHA256()
        bytes.withUnsafeBytes { hash.update($0) }
        return hash.finalize()
    }

    /// The iOS and Android attachments of a complete result.
    static func platforms(_ result: EnrichmentResult) throws -> (ios: FetchedMedia, android: FetchedMedia) {
        #expect(result.outcome == .complete, "\(result.problems)")
        let ios = try #require(result.attachments.first { $0.platform == .ios }?.media, "\(result.problems)")
        let android = try #require(result.attachments.first { $0.platform == .android }?.media, "\(result.problems)")
        #expect(result.attachments.count == 2)
        #expect(ios.directory != android.directory)
        return (ios, android)
    }

    /// Checks what every made Android variant is: a still JPEG or PNG of `type` within FCM's limit and `bound`, as
    /// its record says, its file what the record says, its original `source`.
    static func checkVariant(
        _ android: FetchedMedia, type: MediaType, bound: Int = 1440, source: [UInt8],
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> ImageHeader {
        #expect(android.type == type, sourceLocation: sourceLocation)
        #expect(android.bytes <= 1_048_576, sourceLocation: sourceLocation)
        #expect(try await sha256sum(android.path) == android.sha256, sourceLocation: sourceLocation)
        #expect(
            try FileManager.default.attributesOfItem(atPath: android.path)[.size] as? Int == android.bytes,
            sourceLocation: sourceLocation)
        let header = try VipsConverter().header(of: android.path, type: android.type)
        #expect(header.pages == 1, sourceLocation: sourceLocation)
        #expect(header.longestSide <= bound, sourceLocation: sourceLocation)
        #expect(android.dimensions == ImageSize(width: header.width, height: header.height))
        let original = try #require(android.transformation?.original, sourceLocation: sourceLocation)
        #expect(original.bytes == source.count && original.sha256 == sha256(source), sourceLocation: sourceLocation)
        #expect(android.transformation?.steps.contains(.metadataStripped) == true, sourceLocation: sourceLocation)
        return header
    }

    /// The fixture `name` enriched as an FCM message for both platforms, with libvips; `check` is given the bed, the
    /// result and its iOS and Android attachments.
    static func bothPlatforms(
        _ name: String, _ check: (TestBed, EnrichmentResult, FetchedMedia, FetchedMedia) async throws -> Void
    ) async throws {
        let (bed, _) = try Self.bed()
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(Self.message(bed.url("/media/" + name)))
            let (ios, android) = try Self.platforms(result)
            try await check(bed, result, ios, android)
        }
    }

    @Test(
        """
        an image for Android alone, sent in one message after another: fetched once, where the first message's \
        source, removed once its variant was made, was the cache's entry and the second fetched it again
        """)
    func androidAloneFetchedOnce() async throws {
        let (bed, _) = try Self.bed()
        let text =
            #"{"message":{"token":"t","android":{"notification":{"image":"\#(bed.url("/media/anim.gif"))"}}}}"#
        try await withEnricher(bed.configuration) { enricher in
            for round in 1...3 {
                let result = await enricher.enrich(try PushPayload(parsing: Array(text.utf8)), timeout: .seconds(30))
                #expect(result.outcome == .complete, "round \(round): \(result.problems)")
                #expect(result.attachments.map(\.media.type) == [.png], "round \(round)")
            }
        }
        #expect(bed.origin.requestLog.filter { $0 == "/media/anim.gif" }.count == 1)
    }

    @Test("a GIF stays animated for iOS and becomes a still under 1 MiB for Android, its first frame")
    func gif() async throws {
        try await Self.bothPlatforms("anim.gif") { bed, result, ios, android in
            #expect(ios.type == .gif && ios.sha256 == Self.sha256(fixture("anim.gif")))
            #expect(try VipsConverter().header(of: ios.path, type: .gif).pages > 1)
            let header = try await Self.checkVariant(
                android, type: android.type == .png ? .png : .jpeg, source: fixture("anim.gif"))
            #expect(android.type == (header.hasAlpha ? .png : .jpeg))
            #expect(android.transformation?.steps == [.transcoded, .metadataStripped, .firstFrame])
            // Android shows a GIF's first frame whatever is sent: no animation-dropped problem for its variant.
            #expect(result.problems.isEmpty)
            #expect(bed.origin.requestLog.filter { $0 == "/media/anim.gif" }.count == 1)
            #expect(Set(bed.filesOnDisk()) == Set([ios.path, android.path].map { relative($0, bed) }))
        }
    }

    func relative(_ path: String, _ bed: TestBed) -> String { String(path.dropFirst(bed.attachments.count + 1)) }

    @Test("a 12 MB JPEG: downscaled under the image cap for iOS, under 1 MiB and 1440 pixels for Android")
    func largeJPEG() async throws {
        // 5,000 x 3,200 pixels of noise at quality 85 (iOS's): about 12.2 MB, as hard to shrink as a photo gets, and
        // over the image cap when re-encoded at its size.
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(ImageWriters.ppm(width: 5000, height: 3200, pixels: ImageWriters.noise(5000 * 3200 * 3, seed: 12)))
            .write(to: URL(fileURLWithPath: directory + "/noise.ppm"))
        try await VipsTool.run(["jpegsave", directory + "/noise.ppm", directory + "/large.jpg", "--Q", "85"])
        let large = Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/large.jpg")))
        try #require(large.count > 12_000_000, "the source is \(large.count) bytes")
        let (bed, media) = try Self.bed(files: ["large.jpg": large])
        defer { media.map { try? FileManager.default.removeItem(atPath: $0) } }
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(Self.message(bed.url("/media/large.jpg")), timeout: .seconds(120))
            let (ios, android) = try Self.platforms(result)
            #expect(ios.type == .jpeg && ios.bytes <= 10_000_000)
            #expect(ios.transformation?.steps == [.downscaled, .metadataStripped])
            let header = try await Self.checkVariant(android, type: .jpeg, source: large)
            #expect(header.longestSide <= 1440)
            #expect(android.transformation?.steps == [.downscaled, .metadataStripped])
            #expect(bed.filesOnDisk().count == 2)
        }
    }

    @Test(
        "a WebP and an HEIC: a JPEG for iOS, and for Android that JPEG as it is (already a variant)",
        arguments: ["banner.webp", "photo.heic"])
    func transcoded(name: String) async throws {
        try await Self.bothPlatforms(name) { _, _, ios, android in
            #expect(ios.type == .jpeg && ios.transformation?.steps == [.transcoded, .metadataStripped])
            // iOS's JPEG is small, still, upright and without metadata: Android takes the same bytes.
            _ = try await Self.checkVariant(android, type: .jpeg, source: fixture(name))
            #expect(android.sha256 == ios.sha256)
            #expect(android.transformation == ios.transformation)
        }
    }

    @Test("a PNG with alpha larger than the bound stays a PNG for Android, downscaled, its alpha kept")
    func alpha() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // 2,000 x 1,000: a gradient, with a constant alpha of 128 joined as a fourth band.
        var pixels = [UInt8](repeating: 0, count: 2000 * 1000 * 3)
        for y in 0..<1000 {
            for x in 0..<2000 {
                let at = (y * 2000 + x) * 3
                (pixels[at], pixels[at + 1], pixels[at + 2]) = (UInt8(x & 0xFF), UInt8(y & 0xFF), 200)
            }
        }
        try Data(ImageWriters.ppm(width: 2000, height: 1000, pixels: pixels))
            .write(to: URL(fileURLWithPath: directory + "/gradient.ppm"))
        try await VipsTool.run(["bandjoin_const", directory + "/gradient.ppm", directory + "/alpha.png", "128"])
        let png = Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/alpha.png")))
        let (bed, media) = try Self.bed(files: ["alpha.png": png])
        defer { media.map { try? FileManager.default.removeItem(atPath: $0) } }
        try await withEnricher(bed.configuration) { enricher in
            let (ios, android) = try Self.platforms(await enricher.enrich(Self.message(bed.url("/media/alpha.png"))))
            #expect(ios.type == .png && ios.sha256 == Self.sha256(png))
            let header = try await Self.checkVariant(android, type: .png, source: png)
            #expect(header.hasAlpha && header.width == 1440 && header.height == 720)
            #expect(android.transformation?.steps == [.downscaled, .metadataStripped])
            let pixel = try await VipsTool.pixel(android.path, x: 700, y: 300)
            #expect(pixel.count == 4 && pixel[3] == 128, "\(pixel)")
        }
    }

    @Test(
        "with publishing: iOS's field is the animated GIF's URL, Android's the still variant's, the shared one as sent")
    func published() async throws {
        let published = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: published) }
        let (bed, _) = try Self.bed {
            $0.publisher = DirectoryPublisher(directory: published, baseURL: "https://cdn.test/m")
        }
        try await withEnricher(bed.configuration) { enricher in
            let sent = bed.url("/media/anim.gif")
            let result = await enricher.enrich(Self.message(sent))
            let (ios, android) = try Self.platforms(result)
            let message = try #require(result.content?.root["message"]?.objectValue)
            #expect(message["notification"]?.objectValue?["image"]?.stringValue == sent)
            let apns = message["apns"]?.objectValue?["fcm_options"]?.objectValue
            #expect(apns?["image"]?.stringValue == "https://cdn.test/m/\(ios.sha256).gif")
            let name = "\(android.sha256).\(android.type.fileExtension)"
            #expect(
                message["android"]?.objectValue?["notification"]?.objectValue?["image"]?.stringValue
                    == "https://cdn.test/m/" + name)
            #expect(try await sha256sum(published + "/" + name) == android.sha256, "the variant is what is published")
        }
    }

    @Test("an MP4 is attached for iOS only; Android's refusal is reported for Android, and nothing of it is left")
    func video() async throws {
        let (bed, _) = try Self.bed()
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(Self.message(bed.url("/media/clip.mp4")))
            #expect(result.outcome == .partial)
            #expect(result.attachments.map(\.platform) == [.ios])
            #expect(result.attachments.first?.media.type == .mp4)
            #expect(result.problems.map(\.code) == [.unsupportedType])
            #expect(result.problems.first?.platform == .android)
            #expect(result.problems.first?.detail.contains("neither video nor audio") == true)
            #expect(bed.filesOnDisk().count == 1)
        }
    }

    @Test("a source already Android-safe is kept byte for byte: the same bytes as iOS's, no transformation")
    func kept() async throws {
        // logo.png: 1,046 bytes, still, no text, EXIF or time chunk (pHYs, its pixel density, says nothing).
        try await Self.bothPlatforms("logo.png") { _, _, ios, android in
            #expect(android.sha256 == Self.sha256(fixture("logo.png")))
            #expect(android.sha256 == ios.sha256)
            #expect(android.transformation == nil)
        }
    }

    @Test("an EXIF-rotated JPEG, kept as it is for iOS (which turns it), is converted upright for Android")
    func rotated() async throws {
        // photo-exif.jpg: 160 x 120 stored, orientation 6 (turn 90 degrees clockwise), a GPS position.
        try await Self.bothPlatforms("photo-exif.jpg") { _, _, ios, android in
            #expect(ios.sha256 == Self.sha256(fixture("photo-exif.jpg")))
            let header = try await Self.checkVariant(android, type: .jpeg, source: fixture("photo-exif.jpg"))
            #expect(header.width == 120 && header.height == 160)
            #expect(android.transformation?.steps == [.metadataStripped])
            let written = Array(FileManager.default.contents(atPath: android.path) ?? Data())
            #expect(!written.contains(subsequence: Array("Exif".utf8)))
        }
    }

    @Test("an APNG keeps its frames for iOS; Android's variant is its first frame, still")
    func apng() async throws {
        let (bed, media) = try Self.bed(files: ["apng.png": fixture("corpus/apng-three-frames.png")])
        defer { media.map { try? FileManager.default.removeItem(atPath: $0) } }
        try await withEnricher(bed.configuration) { enricher in
            let (ios, android) = try Self.platforms(await enricher.enrich(Self.message(bed.url("/media/apng.png"))))
            #expect(ios.sha256 == Self.sha256(fixture("corpus/apng-three-frames.png")))
            _ = try await Self.checkVariant(
                android, type: android.type == .png ? .png : .jpeg, source: fixture("corpus/apng-three-frames.png"))
            #expect(android.transformation?.steps.contains(.firstFrame) == true)
            if android.type == .png {
                #expect(!(try PNGChunks(Array(FileManager.default.contents(atPath: android.path)!))).isAnimated)
            }
        }
    }

    /// `source` served as `name` and enriched for both platforms, through a converter that counts its conversions:
    /// iOS attaches it as it is, and Android's variant loses its metadata alone (the one step, no conversion). The
    /// variant's bytes.
    static func strippedVariant(_ name: String, _ source: [UInt8], type: MediaType) async throws -> [UInt8] {
        let holding = HoldingConverter()
        let (bed, media) = try Self.bed(files: [name: source], converter: holding)
        defer { media.map { try? FileManager.default.removeItem(atPath: $0) } }
        return try await withEnricher(bed.configuration) { enricher in
            let (ios, android) = try Self.platforms(await enricher.enrich(Self.message(bed.url("/media/" + name))))
            #expect(ios.sha256 == Self.sha256(source))
            _ = try await Self.checkVariant(android, type: type, source: source)
            #expect(android.transformation?.steps == [.metadataStripped])
            #expect(holding.endings.isEmpty, "no conversion")
            return Array(FileManager.default.contents(atPath: android.path) ?? Data())
        }
    }

    @Test("a PNG whose only fault for Android is its text loses its chunks, not a pixel: the same image data")
    func pngText() async throws {
        // logo.png with a tEXt chunk (an author's name) after its IHDR.
        let logo = try PNGChunks(fixture("logo.png"))
        var texted = PNGChunks.signature
        for chunk in logo.chunks {
            texted += logo.bytes[chunk.whole]
            if chunk.type == "IHDR" { texted += PNGChunks.chunk("tEXt", Array("Author\0Jane Doe".utf8)) }
        }
        let written = try PNGChunks(try await Self.strippedVariant("texted.png", texted, type: .png))
        #expect(written.chunks.map(\.type) == ["IHDR", "IDAT", "IEND"])
        #expect(written.bytes == logo.stripped(), "the image data copied byte for byte")
    }

    @Test("a PNG the chunk filter refuses (a gAMA chunk failing its CRC: phones ignore it) is converted instead")
    func pngBadAncillaryCRC() async throws {
        // logo.png with a text chunk and a gAMA whose CRC is wrong, after its IHDR.
        let logo = try PNGChunks(fixture("logo.png"))
        var gamma = PNGChunks.chunk("gAMA", [0, 0, 0xB1, 0x8F])
        gamma[gamma.count - 1] ^= 0xFF
        var damaged = PNGChunks.signature
        for chunk in logo.chunks {
            damaged += logo.bytes[chunk.whole]
            if chunk.type == "IHDR" { damaged += gamma + PNGChunks.chunk("tEXt", Array("Author\0Jane Doe".utf8)) }
        }
        let (bed, media) = try Self.bed(files: ["damaged.png": damaged])
        defer { media.map { try? FileManager.default.removeItem(atPath: $0) } }
        try await withEnricher(bed.configuration) { enricher in
            let (ios, android) = try Self.platforms(await enricher.enrich(Self.message(bed.url("/media/damaged.png"))))
            #expect(ios.sha256 == Self.sha256(damaged))
            let header = try await Self.checkVariant(
                android, type: android.type == .png ? .png : .jpeg, source: damaged)
            #expect(android.type == (header.hasAlpha ? .png : .jpeg))
        }
    }

    @Test("a JPEG whose only fault for Android is its metadata loses those segments, not a pixel, without libvips")
    func jpegMetadata() async throws {
        // photo.jpg: SOI, JFIF (18 bytes), a comment ('Lavc59', 18 bytes), then the picture; a page after its end.
        let photo = fixture("photo.jpg")
        try #require(photo[20..<22] == [0xFF, 0xFE])
        let source = photo + Array("<html>trailing</html>".utf8)
        #expect(try await Self.strippedVariant("photo.jpg", source, type: .jpeg) == Array(photo[..<20] + photo[38...]))
    }

    @Test("without a converter, a variant that needs one is refused for Android saying so, and nothing is left")
    func noConverter() async throws {
        let (bed, _) = try Self.bed(converter: nil)
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(Self.message(bed.url("/media/anim.gif")))
            #expect(result.outcome == .partial)
            #expect(result.attachments.map(\.platform) == [.ios])
            let problem = try #require(result.problems.first)
            #expect(result.problems.count == 1)
            #expect(problem.platform == .android && problem.code == .unsupportedType)
            #expect(problem.detail.contains("a GIF") && problem.detail.contains("needs a converter"), "\(problem)")
            #expect(!problem.detail.contains("yet"))
            #expect(bed.filesOnDisk().count == 1)
        }
    }

    @Test("a variant still waiting for a thread at its deadline ends expired then, and nothing of it is left")
    func deadline() async throws {
        let holding = HoldingConverter()
        let (bed, _) = try Self.bed(converter: holding) { $0.transform.concurrency = 1 }
        try await withEnricher(bed.configuration) { enricher in
            // The one thread is held by an iOS conversion (a WebP) until the Android payload has returned.
            holding.holdNext()
            let blocker = Task {
                await enricher.enrich(TestBed.adobePayload(bed.url("/media/banner.webp")), timeout: .seconds(60))
            }
            try await waitUntil("the blocking conversion to be held", within: .seconds(30)) { holding.isHolding }
            let text = #"{"token":"t","android":{"notification":{"image":"\#(bed.url("/media/anim.gif"))"}}}"#
            let late = await enricher.enrich(try PushPayload(parsing: Array(text.utf8)), timeout: .seconds(1))
            #expect(holding.isHolding, "the variant returned only once the thread was free")
            #expect(late.outcome == .expired)
            #expect(late.problems.map(\.code) == [.expired], "\(late.problems)")
            #expect(late.problems.first?.platform == .android)
            holding.release()
            _ = enricher.removeAttachments(of: await blocker.value)
            #expect(holding.endings == ["finished"], "the variant never reached the converter")
            try await waitUntil("nothing left on disk", within: .seconds(20)) { bed.entriesOnDisk().isEmpty }
        }
    }

    @Test("a campaign of 30 messages over 2 GIFs fetches each GIF once and makes 2 Android conversions")
    func campaign() async throws {
        let holding = HoldingConverter()
        let (bed, media) = try Self.bed(fixtures: ["anim.gif", "logo.png"], converter: holding)
        defer { media.map { try? FileManager.default.removeItem(atPath: $0) } }
        // A second GIF: the logo, as libvips writes it.
        try await VipsTool.run(["copy", media! + "/logo.png", media! + "/logo.gif"])
        let names = ["anim.gif", "logo.gif"]
        try await withEnricher(bed.configuration) { enricher in
            let results = await withTaskGroup(of: EnrichmentResult.self) { group in
                for index in 0..<30 {
                    group.addTask { await enricher.enrich(Self.message(bed.url("/media/" + names[index % 2]))) }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(holding.endings == ["finished", "finished"], "one conversion per GIF, for Android")
            var variants: [String: Set<String>] = [:]
            var directories = Set<String>()
            for result in results {
                let (ios, android) = try Self.platforms(result)
                #expect(ios.type == .gif)
                variants[ios.sha256, default: []].insert(android.sha256)
                directories.formUnion([ios.directory, android.directory])
            }
            #expect(variants.count == 2 && variants.values.allSatisfy { $0.count == 1 })
            #expect(directories.count == 60, "every attachment in a directory of its own")
            for name in names { #expect(bed.origin.requestLog.filter { $0 == "/media/" + name }.count == 1) }
        }
    }
}
