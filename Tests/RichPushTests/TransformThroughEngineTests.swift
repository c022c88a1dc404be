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
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let media = directory + "/media"
        try FileManager.default.createDirectory(atPath: media, withIntermediateDirectories: true)
        try Data(ImageWriters.lateSVG()).write(to: URL(fileURLWithPath: media + "/late.svg"))
        let bed = try TestBed(media: media) { $0.transform.converter = VipsConverter() }
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
        let input = directory + "/avif.json"
        try Data(#"{"aps":{"mutable-content":1},"adb_media":"\#(bed.url("/media/photo.avif"))"}"#.utf8)
            .write(to: URL(fileURLWithPath: input))
        let run = try await CLI.run(["enrich"] + bed.cliOptions + [input])
        let attachment = (run.lines.first?["attachments"] as? [[String: Any]])?.first
        #expect(attachment?["mime"] as? String == "image/jpeg", "\(run.stdout)")
        #expect(!run.stderr.contains("WARNING"), "\(run.stderr)")
        #expect(run.stderr.isEmpty, "\(run.stderr)")
    }

}
