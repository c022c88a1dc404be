import Foundation
import RichPushTestSupport
import RichPushTransform
import Testing

@testable import RichPush

/// How the engine and the CLI use the transformation: the type libmagic decided, libvips's warnings kept off
/// standard error. VipsConverter's own suites are in RichPushTransformTests.
@Suite(.offPool) struct TransformThroughEngineTests {
    @Test("the step reads a file as the type libmagic decided: an SVG past 3 KB is attached as a PNG")
    func lateSVGAttached() async throws {
        let directory = try Self.mediaDirectory(["late.svg": ImageWriters.lateSVG()])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bed = try TestBed(media: directory + "/media") { $0.transform.converter = VipsConverter() }
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(TestBed.adobePayload(bed.url("/media/late.svg")))
            let attached = try #require(result.attachments.first?.media, "\(result.problems)")
            #expect(attached.type == .png && attached.transformation?.original.type == .svg)
        }
    }

    @Test("libvips's warnings never reach standard error: `richpush enrich` of an AVIF libvips warns about")
    func warningsSilenced() async throws {
        // libvips 8.14 warns "heifload: ignoring nclx profile" for photo.avif (seen with `vips copy`).
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (run, attachment) = try await Self.enrich(bed, "/media/photo.avif", in: directory)
        #expect(attachment?["mime"] as? String == "image/jpeg", "\(run.stdout)")
        #expect(!run.stderr.contains("WARNING"), "\(run.stderr)")
        #expect(run.stderr.isEmpty, "\(run.stderr)")
    }

    @Test("an SVG that begins with a UTF-8 byte-order mark is attached as a PNG by `richpush enrich` (its renderer)")
    func markedSVG() async throws {
        let svg =
            #"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>"#
        let directory = try Self.mediaDirectory(["marked.svg": [0xEF, 0xBB, 0xBF] + Array(svg.utf8)])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bed = try TestBed(media: directory + "/media")
        let (run, attachment) = try await Self.enrich(bed, "/media/marked.svg", in: directory)
        #expect(attachment?["mime"] as? String == "image/png", "\(run.stdout)")
    }

    /// `richpush enrich` of a payload (written in `directory`) referencing `path` on the bed's origin: the run and
    /// its first attachment.
    static func enrich(_ bed: TestBed, _ path: String, in directory: String) async throws -> (
        CLI.Run, [String: Any]?
    ) {
        let input = directory + "/payload.json"
        try Data(#"{"aps":{"mutable-content":1},"adb_media":"\#(bed.url(path))"}"#.utf8)
            .write(to: URL(fileURLWithPath: input))
        let run = try await CLI.run(["enrich"] + bed.cliOptions + [input])
        return (run, (run.lines.first?["attachments"] as? [[String: Any]])?.first)
    }

    /// A new directory holding `media/` with `files` (name and bytes), for a `TestBed` to serve.
    static func mediaDirectory(_ files: [String: [UInt8]]) throws -> String {
        let directory = try temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory + "/media", withIntermediateDirectories: true)
        for (name, bytes) in files { try Data(bytes).write(to: URL(fileURLWithPath: directory + "/media/" + name)) }
        return directory
    }
}
