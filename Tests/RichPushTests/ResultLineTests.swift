import Foundation
import Testing

@testable import RichPush

/// Off the pool: every combination of members is seconds of CPU.
@Suite(
    "EnrichmentResult.line(input:) and jsonBytes(): the bytes of the JSON tree, written straight", .offPool)
struct ResultLineTests {
    /// The line the tree gives: what `stream` wrote before `line(input:)`.
    static func reference(_ result: EnrichmentResult, input: String) -> [UInt8] {
        JSONWriter.bytes(result.json(input: input)) + [0x0A]
    }

    static let media = FetchedMedia(
        path: "/tmp/root/3f2a/9c1e.jpg", directory: "/tmp/root/3f2a", type: .jpeg, bytes: 102_400,
        sha256: String(repeating: "ab", count: 32))

    /// Attachments of every shape the output has: minimal; transformed, published, hinted, with a thumbnail, retried,
    /// a fallback's, for Android; a failed publication (not written); strings that need escapes.
    static let attachmentSets: [[EnrichmentResult.Attachment]] = {
        let minimal = EnrichmentResult.Attachment(
            identifier: "adb_media", source: "http://127.0.0.1:1/c/00.jpg", field: "adb_media", convention: "adb_media",
            media: media)
        var full = EnrichmentResult.Attachment(
            identifier: "hero", source: "https://cdn.example/a.webp?x=1&y=\"2\"", field: "message.android.image",
            convention: "fcm", platform: .android, media: media,
            thumbnail: Thumbnail(
                primary: true, hidden: false, clip: Thumbnail.Clip(x: 0.1, y: 0.25, width: 0.5, height: 1), time: 1.5),
            typeHint: "image/webp", attempts: 3, fallbackFor: "https://cdn.example/primary.png")
        full.media.transformation = Transformation(
            steps: Transformation.Step.allCases,
            original: Transformation.Original(type: .png, bytes: 2_000_000_000_000, sha256: "00ff"))
        full.media.publication = .published("https://store.example/b/a\\b.jpg")
        var failed = minimal
        failed.identifier = "line\nfeed\t\u{1}é🎉"
        failed.media.publication = .failed("the store said 503")
        failed.media.bytes = 0
        failed.thumbnail = Thumbnail(hidden: true)
        return [[], [minimal], [full], [minimal, full, failed]]
    }()

    /// Payloads: none (an invalid input), compact, with white space, escapes and numbers to keep as written.
    static let contents: [PushPayload?] = {
        let compact = #"{"aps":{"alert":"hi","mutable-content":1},"adb_media":"http://127.0.0.1:1/c/00.jpg"}"#
        let spaced = #"""
            { "aps" : { "alert" : "caf\u00e9 \"x\" \ud800" , "mutable-content" : 1.0 } ,
              "n" : 12345678901234567890123 , "list" : [ 1 , true , null , { } , [ ] ] , "e" : -0.5e-3 }
            """#
        return [nil] + [compact, spaced].map { try! PushPayload(parsing: Array($0.utf8)) }
    }()

    static let formats: [PayloadFormat?] = [
        nil, PayloadFormat(.apns, decidedBy: "aps"), PayloadFormat(.fcmV1, wrapped: true, decidedBy: "message.apns"),
        PayloadFormat(.fcmV1, decidedBy: "notification and \"token\""),
    ]

    static let routes: [DeepLinkRoute?] = {
        var id = DeepLinkRoute.empty
        id.id = "42"
        id.idSource = DeepLinkRoute.Source(convention: nil, key: "id")
        var full = id
        full.url = "app://open?x=\"1\""
        full.urlSource = DeepLinkRoute.Source(convention: "airship", key: "^d")
        return [nil, id, full]
    }()

    static let problemSets: [[EnrichmentProblem]] = [
        [],
        [EnrichmentProblem(source: "aps.mutable-content", code: .notMutable, detail: "missing")],
        [
            EnrichmentProblem(
                source: "http://x/a\"b", code: .typeMismatch, detail: "said 'x'\n\\ got \u{7}", attempts: 2,
                platform: .android),
            EnrichmentProblem(source: "payload", code: .cancelled, detail: "", attempts: 0, platform: .ios),
        ],
    ]

    static let elapsed: [Duration] = [
        .zero, .nanoseconds(99_999), .microseconds(12_345), .milliseconds(1_550), .seconds(86_400),
        .nanoseconds(123_456_789_012),
    ]

    static let inputs: [String?] = [nil, "-:1", "req \"7\"\n:3"]

    @Test("every combination of the output's members writes the tree's bytes, line and jsonBytes() alike")
    func combinations() {
        var checked = 0
        var mismatches: [String] = []
        for (index, content) in Self.contents.enumerated() {
            for attachments in Self.attachmentSets {
                // The content as results carry it: with the `richpush` list of its attachments.
                let content = content.map { EnrichmentRun.mutate($0, with: attachments) }
                for format in Self.formats {
                    for route in Self.routes {
                        for problems in Self.problemSets {
                            for elapsed in Self.elapsed {
                                for input in Self.inputs {
                                    let outcomes = EnrichmentResult.Outcome.allCases
                                    let result = EnrichmentResult(
                                        outcome: outcomes[checked % outcomes.count], content: content,
                                        attachments: attachments, route: route, problems: problems,
                                        elapsed: elapsed, input: input, format: format)
                                    checked += 1
                                    let line = result.line(input: input ?? "-")
                                    if line != Self.reference(result, input: input ?? "-") {
                                        mismatches.append("content \(index): \(String(decoding: line, as: UTF8.self))")
                                    }
                                    if line.dropLast() != result.jsonBytes(input: input ?? "-")[...] {
                                        mismatches.append("jsonBytes(input:): \(String(decoding: line, as: UTF8.self))")
                                    }
                                    if result.jsonBytes() != JSONWriter.bytes(result.json) {
                                        mismatches.append("jsonBytes: \(String(decoding: line, as: UTF8.self))")
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        #expect(checked == 3 * 4 * 4 * 3 * 3 * 6 * 3)
        #expect(mismatches.isEmpty, "\(mismatches.count) of \(checked); first: \(mismatches.first ?? "")")
    }

    @Test(
        "a real result of every fixture payload, and one past its deadline before it began, writes the tree's bytes",
        .timeLimit(.minutes(1)))
    func fixtures() async throws {
        let bed = try TestBed()
        let names = try ["", "invalid/"].flatMap { folder in
            try FileManager.default.contentsOfDirectory(atPath: FixtureDirectory.payloads + "/" + folder)
                .filter { $0.hasSuffix(".json") }.sorted().map { folder + $0 }
        }
        try #require(names.count > 40)
        var outcomes = Set<EnrichmentResult.Outcome>()
        try await withEnricher(bed.configuration) { enricher in
            for name in names {
                let data = try Data(contentsOf: URL(fileURLWithPath: FixtureDirectory.payloads + "/" + name))
                // invalid/bad-utf8.json is not UTF-8: as it is.
                let bytes =
                    String(data: data, encoding: .utf8).map {
                        Array($0.replacingOccurrences(of: "http://media.example.com:8787", with: bed.url("")).utf8)
                    } ?? Array(data)
                for deadline in [Duration.zero, .seconds(10)] {
                    let result = await enricher.enrich(json: bytes, source: name, deadline: .now + deadline)
                    #expect(result.line(input: name) == Self.reference(result, input: name), "\(name)")
                    #expect(result.jsonBytes() == JSONWriter.bytes(result.json), "\(name)")
                    outcomes.insert(result.outcome)
                }
            }
        }
        // The fixtures give every outcome but a cancellation (the shapes of their problems and attachments with it).
        #expect(outcomes == Set(EnrichmentResult.Outcome.allCases).subtracting([.cancelled]), "\(outcomes)")
    }

    @Test("a result's copy changes alone (its fields are in a box the copies share); described by its fields")
    func copiesChangeAlone() throws {
        let content = try PushPayload(parsing: Array(#"{"aps":{"alert":"a"}}"#.utf8))
        let original = EnrichmentResult(outcome: .complete, content: content, elapsed: .milliseconds(5), input: "a")
        var changed = original
        changed.outcome = .failed
        changed.input = "b"
        changed.content = nil
        changed.elapsed = .milliseconds(7)
        changed.problems = [EnrichmentProblem(source: "x", code: .httpStatus, detail: "HTTP 503")]
        #expect(original.outcome == .complete && original.input == "a" && original.content == content)
        #expect(original.elapsed == .milliseconds(5) && original.problems.isEmpty)
        #expect(
            original == EnrichmentResult(outcome: .complete, content: content, elapsed: .milliseconds(5), input: "a"))
        #expect(changed.outcome == .failed && changed.input == "b" && changed.content == nil)
        #expect(changed.problems.count == 1 && changed != original)
        let described = String(describing: original)
        #expect(described.contains("input: Optional(\"a\")") && !described.contains("Box"))
    }
}
