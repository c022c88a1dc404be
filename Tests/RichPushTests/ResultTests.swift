import Foundation
import Testing

@testable import RichPush

@Suite("EnrichmentResult: the CLI's JSON through Encodable and jsonBytes(); removing attachments")
struct ResultTests {
    /// The same JSON value, whatever the spelling (`3` and `3.0`, key order, escapes): Foundation's reading of both.
    static func sameJSON(_ left: [UInt8], _ right: Data) throws -> Bool {
        let a = try JSONSerialization.jsonObject(with: Data(left)) as? NSDictionary
        let b = try JSONSerialization.jsonObject(with: right) as? NSDictionary
        return a != nil && a == b
    }

    @Test(
        """
        JSONEncoder gives the object the CLI writes (json(input:)), for results with thumbnails, hints, routes, \
        problems
        """,
        arguments: [
            "airship.json", "clevertap-mismatch.json", "zego-object.json", "two-conventions.json", "no-media.json",
        ])
    func encodable(fixture: String) async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            var result = await enricher.enrich(try bed.fixturePayload(fixture), timeout: .seconds(10))
            result.input = "push-123"
            let reference = JSONWriter.bytes(result.json(input: "push-123"))
            #expect(result.jsonBytes() == reference)
            let encoder = JSONEncoder()
            encoder.outputFormatting = .withoutEscapingSlashes
            let encoded = try encoder.encode(result)
            #expect(try Self.sameJSON(reference, encoded), "\(String(decoding: encoded, as: UTF8.self))")
        }
    }

    @Test("an invalid input's result encodes as the CLI writes it, input named, content null")
    func invalid() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(json: Array("{nope".utf8), source: "-:7", deadline: .now + .seconds(5))
            #expect(result.input == "-:7")
            let reference = JSONWriter.bytes(result.json(input: "-:7"))
            #expect(result.jsonBytes() == reference)
            let encoded = try JSONEncoder().encode(result)
            #expect(try Self.sameJSON(reference, encoded))
            #expect(
                String(decoding: reference, as: UTF8.self).hasPrefix(
                    #"{"input":"-:7","outcome":"invalid","content":null"#))
        }
    }

    @Test("removeAttachments(of:) removes each attachment's directory, and nothing outside the root")
    func removeAttachments() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(try bed.fixturePayload("airship.json"), timeout: .seconds(10))
            // Required: the lines below index the attachments (a failed expectation went on to crash the process).
            try #require(result.attachments.count == 2, "\(result.problems)")
            #expect(bed.filesOnDisk().count == 2)
            #expect(enricher.removeAttachments(of: result) == 2)
            #expect(bed.entriesOnDisk().isEmpty, "left: \(bed.entriesOnDisk())")
            #expect(enricher.removeAttachments(of: result) == 0, "removed twice")
            // A result naming a file elsewhere (a test double, a result of another enricher) is left alone.
            let outside = NSTemporaryDirectory() + UUID().uuidString.lowercased()
            try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: outside) }
            #expect(FileManager.default.createFile(atPath: outside + "/a.jpg", contents: Data([1])))
            var foreign = result
            foreign.attachments[0].media.directory = outside
            foreign.attachments[0].media.path = outside + "/a.jpg"
            #expect(enricher.removeAttachments(of: foreign) == 0)
            #expect(FileManager.default.fileExists(atPath: outside + "/a.jpg"))
        }
    }
}
