import FixtureOrigin
import Foundation
import Testing

@testable import RichPush
@testable import RichPushTransform

/// Results read back: real output lines of the engine (fixture payloads against the loopback origin, transformed
/// and published) decode to the results that wrote them, through `init(parsing:)` and through `JSONDecoder`.
@Suite("EnrichmentResult: decoding what the CLI and the service write", .offPool)
struct ResultDecodingTests {
    static let fixtures = [
        "airship.json", "airship-thumbnail.json", "clevertap-mismatch.json", "zego-object.json", "two-conventions.json",
        "no-media.json", "lossless.json", "route-onesignal-custom.json", "route-airship.json", "webp-transcoded.json",
        "html-as-image.json", "not-mutable.json", "retry-transient.json",
    ]

    /// What the output holds of `result`: its attachments' media without what the format leaves out (validators,
    /// dimensions, damage, a failed publication, the provenance, the file's identity), `elapsed` to the tenth of a
    /// millisecond.
    static func written(_ result: EnrichmentResult) -> EnrichmentResult {
        var written = result
        written.attachments = result.attachments.map { attachment in
            var attachment = attachment
            attachment.media.validators = Validators()
            attachment.media.dimensions = nil
            attachment.media.damage = nil
            attachment.media.provenance = nil
            attachment.media.identity = nil
            if case .failed? = attachment.media.publication { attachment.media.publication = nil }
            return attachment
        }
        let (seconds, attoseconds) = result.elapsed.components
        written.elapsed = .microseconds((seconds * 10_000 + attoseconds / 100_000_000_000_000) * 100)
        return written
    }

    /// A JSON value's text with its objects' keys sorted: the same for the same value, whatever the order.
    static func sorted(_ content: PushPayload?) throws -> String? {
        guard let content else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(content.json), as: UTF8.self)
    }

    @Test("every output line decodes to the result that wrote it, and writes the same line again")
    func roundTrip() async throws {
        let directory = NSTemporaryDirectory() + "richpush-decode-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bed = try TestBed { configuration in
            configuration.publisher = DirectoryPublisher(directory: directory, baseURL: "https://cdn.example.com/push/")
            configuration.transform.converter = VipsConverter()
        }
        try await withEnricher(bed.configuration) { enricher in
            var results: [EnrichmentResult] = []
            for (index, fixture) in Self.fixtures.enumerated() {
                var result = await enricher.enrich(try bed.fixturePayload(fixture), timeout: .seconds(20))
                result.input = "push-\(index)"
                results.append(result)
            }
            results.append(await enricher.enrich(json: Array("[1]".utf8), source: "-:9", deadline: .now + .seconds(5)))
            // The lines reach what the format has: a transformation, a publication, a thumbnail, a route, a hint,
            // problems with and without attempts, an invalid input.
            let attachments = results.flatMap(\.attachments)
            #expect(attachments.contains { $0.media.transformation != nil })
            #expect(attachments.contains { if case .published? = $0.media.publication { true } else { false } })
            #expect(attachments.contains { $0.thumbnail?.clip != nil } && attachments.contains { $0.typeHint != nil })
            #expect(results.contains { $0.route?.idSource != nil || $0.route?.urlSource != nil })
            #expect(results.contains { $0.problems.contains { $0.attempts != nil } })
            #expect(results.contains { $0.problems.contains { $0.attempts == nil } })
            #expect(results.contains { $0.outcome == .invalid })
            var throughFoundation = 0
            for result in results {
                let line = result.jsonBytes()
                let text = String(decoding: line, as: UTF8.self)
                var parsed = try EnrichmentResult(parsing: line)
                #expect(parsed.jsonBytes() == line)
                // The content as exact as written: the same bytes (a string made in code and the same string
                // parsed with its escapes are not `==`, and write alike).
                #expect(
                    parsed.content.map { JSONWriter.bytes($0.json) } == result.content.map { JSONWriter.bytes($0.json) }
                )
                parsed.content = result.content
                #expect(parsed == Self.written(result), "\(text)")
                // Foundation refuses what JSON allows and a Swift String cannot hold (lossless.json's lone
                // surrogate); the other lines decode through JSONDecoder, the content the same value with its
                // members in the decoder's order.
                guard (try? JSONSerialization.jsonObject(with: Data(line))) != nil else { continue }
                throughFoundation += 1
                var decoded = try JSONDecoder().decode(EnrichmentResult.self, from: Data(line))
                #expect(try Self.sorted(decoded.content) == Self.sorted(result.content), "\(text)")
                decoded.content = result.content
                #expect(decoded == parsed, "\(text)")
            }
            #expect(throughFoundation == results.count - 1, "only lossless.json is beyond Foundation")
        }
    }

    @Test("a result encoded by JSONEncoder decodes back; a leaf type alone round-trips, FetchedMedia whole")
    func leaves() throws {
        var media = FetchedMedia(
            path: "/r/a/a.jpg", directory: "/r/a", type: .jpeg, bytes: 10, sha256: "ab",
            validators: Validators(etag: "\"x\"", lastModified: "Tue, 01 Dec 2026 10:00:00 GMT"),
            transformation: Transformation(
                steps: [.transcoded, .downscaled], original: .init(type: .webp, bytes: 20, sha256: "cd")),
            dimensions: ImageSize(width: 3, height: 4))
        media.damage = "cut short"
        media.publication = .failed("read-only")
        media.provenance = FetchedMedia.Provenance(redirects: ["https://a.example/b"], contentType: "text/plain")
        let encoder = JSONEncoder()
        let decoder = JSONDecoder()
        #expect(try decoder.decode(FetchedMedia.self, from: encoder.encode(media)) == media)
        media.publication = .published("https://cdn.example.com/ab.jpg")
        #expect(try decoder.decode(FetchedMedia.self, from: encoder.encode(media)) == media)
        media.provenance = FetchedMedia.Provenance()
        #expect(try decoder.decode(FetchedMedia.self, from: encoder.encode(media)) == media, "none sent, none followed")
        let problem = EnrichmentProblem(source: "u", code: .tooLarge, detail: "d", attempts: 2)
        #expect(try decoder.decode(EnrichmentProblem.self, from: encoder.encode(problem)) == problem)
        #expect(
            try decoder.decode(EnrichmentResult.Outcome.self, from: encoder.encode(EnrichmentResult.Outcome.expired))
                == .expired)
        #expect(String(decoding: try encoder.encode(MediaType.png), as: UTF8.self) == #""public.png""#)
        let result = EnrichmentResult(
            outcome: .partial, content: try PushPayload(parsing: Array(#"{"a":1}"#.utf8)),
            attachments: [
                .init(
                    identifier: "i", source: "s", field: "f", convention: "c", platform: .android, media: media,
                    typeHint: "jpg", attempts: 2)
            ],
            problems: [problem], elapsed: .milliseconds(12), input: "x")
        // Its attachment as the output has it: the media's validators, dimensions, damage and provenance are not
        // written.
        #expect(try decoder.decode(EnrichmentResult.self, from: encoder.encode(result)) == Self.written(result))
        #expect(Self.written(result) != result, "the media above has what the output leaves out")
    }

    @Test(
        "what is not a result is refused, naming the member",
        arguments: [
            (#"{"outcome":"complete","content":null,"attachments":[],"problems":[]}"#, "elapsed_ms: missing"),
            (
                #"{"outcome":"done","content":null,"attachments":[],"problems":[],"elapsed_ms":1.0}"#,
                "outcome: 'done' is not an outcome"
            ),
            (
                #"{"outcome":"partial","content":null,"attachments":[{"identifier":"i"}],"problems":[],"#
                    + #""elapsed_ms":1.0}"#,
                "attachments[0].source: missing"
            ),
            (
                #"{"outcome":"failed","content":null,"attachments":[],"problems":[{"source":"s","code":7,"#
                    + #""detail":"d"}],"elapsed_ms":0.5}"#,
                "problems[0].code: expected a string, got a number"
            ),
        ])
    func refused(text: String, message: String) {
        let error = #expect(throws: DecodingError.self) { try EnrichmentResult(parsing: Array(text.utf8)) }
        #expect(error.map { "\($0)".contains(message) } == true, "\(String(describing: error))")
    }
}
