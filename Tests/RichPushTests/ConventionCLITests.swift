import FixtureOrigin
import Foundation
import Testing

@testable import RichPush

/// The conventions layer seen through the CLI: routes in the output, `--conventions` files, `render`. The layer's
/// own tests are in RichPushConventionsTests.
@Suite("Conventions through the CLI")
struct ConventionCLITests {
    @Test("the result carries the route; the CLI keys replace the defaults")
    func routes() async throws {
        let bed = try TestBed()
        let payload =
            #"{"aps":{"mutable-content":1},"adb_media":"\#(bed.url("/media/logo.png"))","deeplink":"app://x","#
            + #""ref":"9"}"#
        let run = try await CLI.run(["enrich"] + bed.cliOptions, stdin: payload)
        let first = run.lines.first?["route"] as? [String: Any]
        #expect(first?["url"] as? String == "app://x")
        #expect((first?["url_source"] as? [String: Any])?["key"] as? String == "deeplink")
        #expect((first?["url_source"] as? [String: Any])?["convention"] == nil)
        let keyed = try await CLI.run(
            ["enrich", "--route-id-key", "ref", "--route-url-key", "none"] + bed.cliOptions, stdin: payload)
        let route = keyed.lines.first?["route"] as? [String: Any]
        #expect(route?["id"] as? String == "9")
        #expect(route?["url"] == nil)
    }

    @Test("--conventions: the CLI adds the file's conventions; --convention can name them; a bad file is a usage error")
    func conventionFile() async throws {
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/conventions.json"
        try Data(#"{"conventions":[{"name":"acme","url":["acme","img"],"hint":["acme","kind"]}]}"#.utf8)
            .write(to: URL(fileURLWithPath: file))
        let payload = #"{"aps":{"mutable-content":1},"acme":{"img":"\#(bed.url("/media/logo.png"))","kind":"video"}}"#
        let run = try await CLI.run(
            ["enrich", "--conventions", file, "--convention", "acme"] + bed.cliOptions, stdin: payload)
        #expect(run.status == 0)
        let attachment = (run.lines.first?["attachments"] as? [[String: Any]])?.first
        #expect(attachment?["convention"] as? String == "acme")
        #expect(attachment?["type_hint"] as? String == "video")
        let codes = (run.lines.first?["problems"] as? [[String: Any]])?.compactMap { $0["code"] as? String }
        #expect(codes == ["type-mismatch"])
        try Data(#"{"conventions":[{"name":"acme"}]}"#.utf8).write(to: URL(fileURLWithPath: file))
        let bad = try await CLI.run(["enrich", "--conventions", file], stdin: payload)
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("conventions[0] (acme): \"url\" is required"))
    }

    @Test("the CLI renders the JSON-strings fixture: enrich finds ZEGOCLOUD's and Notifee's media in it")
    func renderJSONStrings() async throws {
        let run = try await CLI.run([
            "render", "--strict", "--template", FixtureDirectory.root + "/templates/json-strings.json",
            "--params", FixtureDirectory.root + "/templates/json-strings-params.json",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let payload = try PushPayload(parsing: Array(run.stdout.utf8.dropLast()))
        let scan = ConventionRegistry.standard.scan(payload)
        #expect(scan.references.map(\.convention) == ["zego", "notifee"])
        #expect(
            scan.references.map(\.url) == [
                "http://media.example.com:8787/media/anim.gif", "http://media.example.com:8787/media/logo.png",
            ])
        #expect(scan.overrides.first?.title == "Zoë ...")
        let alert = payload.root["aps"]?.objectValue?["alert"]?.objectValue
        #expect(alert?["title"]?.stringValue == "Zoë 👩‍💻 Ko")
        #expect(alert?["body"]?.stringValue == "$(caller) and more are calling")
        #expect(payload.root["extra"]?.stringValue == ##"{"keep":"$(img)"}"##)
        #expect(payload.root["empty"]?.stringValue == "{}")
    }

    func fixtureBytes(_ path: String) -> [UInt8] { Array(FileManager.default.contents(atPath: path)!) }

    @Test("the CLI renders the fixture into a payload enrich accepts")
    func render() async throws {
        let run = try await CLI.run([
            "render", "--template", FixtureDirectory.root + "/templates/sale.json",
            "--params", FixtureDirectory.root + "/templates/sale-params.json",
        ])
        #expect(run.status == 0)
        #expect(
            run.stdout
                == ##"{"aps":{"alert":{"title":"Weekend sale starts ","body":"Hi Ada, Everything thirty per..."},"##
                + ##""badge":3,"mutable-content":1},"adb_media":"http://media.example.com:8787/media/photo.jpg","##
                + ##""campaign":"spring-2026"}"##
                + "\n")
        let payload = try PushPayload(parsing: Array(run.stdout.utf8.dropLast()))
        #expect(ConventionRegistry.standard.scan(payload).references.count == 1)
        // The template and its parameters saved with a UTF-8 byte-order mark, as some editors save files.
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for name in ["sale.json", "sale-params.json"] {
            let bytes = [0xEF, 0xBB, 0xBF] + fixtureBytes(FixtureDirectory.root + "/templates/" + name)
            try Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + name))
        }
        let marked = try await CLI.run([
            "render", "--template", directory + "/sale.json", "--params", directory + "/sale-params.json",
        ])
        #expect(marked.status == 0, "\(marked.stderr)")
        #expect(marked.stdout == run.stdout)
        let missing = try await CLI.run([
            "render", "--template", FixtureDirectory.root + "/templates/sale.json", "--params", "/nonexistent.json",
        ])
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("--params"))
        // Properties that are not an object of strings and numbers: the file given is wrong, a usage error too.
        for (text, said) in [
            ("[1]", "the properties must be a JSON object"), (#"{"x":null}"#, "property 'x' holds null"),
        ] {
            try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/bad-params.json"))
            let bad = try await CLI.run([
                "render", "--template", directory + "/sale.json", "--params", directory + "/bad-params.json",
            ])
            #expect(bad.status == 64, "\(text): \(bad.stderr)")
            #expect(bad.stderr.contains("--params \(directory)/bad-params.json: \(said)"), "\(bad.stderr)")
        }
    }

    @Test(
        """
        render prints nothing past the payload limit once written: expressions within their 1 MiB whose control \
        characters are escaped to six bytes each are refused (exit 1), not printed for enrich to refuse
        """)
    func renderWrittenSize() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let template = directory + "/template.json"
        let params = directory + "/params.json"
        try Data(#"{"aps":{"alert":"$(a)"},"b":"$(a)"}"#.utf8).write(to: URL(fileURLWithPath: template))
        func write(_ count: Int) throws {
            let value = String(repeating: "\\u0001", count: count)
            try Data(#"{"a":"\#(value)"}"#.utf8).write(to: URL(fileURLWithPath: params))
        }
        // 2 x 100,000 characters: 200,000 bytes of expressions, 1.2 MB written.
        try write(100_000)
        let refused = try await CLI.run(["render", "--template", template, "--params", params])
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stdout.isEmpty)
        #expect(refused.stderr.contains("bytes once written; the payload limit is 1048576"), "\(refused.stderr)")
        // 2 x 80,000: 960,000 bytes written, printed and read back.
        try write(80_000)
        let printed = try await CLI.run(["render", "--template", template, "--params", params])
        #expect(printed.status == 0, "\(printed.stderr)")
        #expect((try? PushPayload(parsing: Array(printed.stdout.utf8.dropLast()))) != nil)
    }

    @Test("render refuses a template that is not an object (a usage error, nothing printed): it would print no payload")
    func renderTemplateNotObject() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let params = directory + "/params.json"
        try Data(#"{"img":"https://cdn.example.com/a.jpg"}"#.utf8).write(to: URL(fileURLWithPath: params))
        for (text, kind) in [(#""$(img)""#, "a string"), (#"["$(img)"]"#, "an array")] {
            let template = directory + "/template.json"
            try Data(text.utf8).write(to: URL(fileURLWithPath: template))
            let refused = try await CLI.run(["render", "--template", template, "--params", params])
            #expect(refused.status == 64, "\(kind): \(refused.stderr)")
            #expect(refused.stdout.isEmpty)
            let said = refused.stderr.contains("a template is a payload, a JSON object; this is \(kind)")
            #expect(said, "\(refused.stderr)")
        }
    }
}

/// Issue 24: round three's conventions through the CLI, against the loopback origin.
@Suite("Round three conventions through the CLI")
struct RoundThreeCLITests {
    /// `enrich` over one fixture, rewritten for `bed`; its result line.
    func enrich(_ fixture: String, on bed: TestBed) async throws -> [String: Any] {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try await CLI.run(["enrich"] + bed.cliOptions + [try bed.payloadFile(fixture, directory: directory)])
        #expect(run.status == 0, "\(run.stderr)")
        return try #require(run.lines.first)
    }

    /// Each fixture: its convention, and per attachment the field, the identifier as the vendor names them; the
    /// declared type (`type_hint`) where the vendor sends one.
    static let fixtures:
        [(fixture: String, convention: String, fields: [String], identifiers: [String], hint: String?)] =
            [
                ("moengage.json", "moengage", ["moengage.media-attachment"], ["media-attachment"], "video"),
                ("salesforce.json", "salesforce", ["_mediaUrl"], ["_mediaUrl"], nil),
                ("klaviyo.json", "klaviyo", ["rich-media"], ["rich-media"], "png"),
                ("swrve.json", "swrve", ["_sw.media.url"], ["swrve_media"], nil),
                ("adobe-campaign.json", "adobe_campaign", ["media-attachment-url"], ["media-attachment-url"], nil),
                ("emarsys.json", "emarsys", ["image_url"], ["image_url"], nil),
                ("bloomreach.json", "bloomreach", ["image"], ["image.png"], nil),
                ("webengage.json", "webengage", ["expandableDetails.image"], ["0"], nil),
                (
                    "webengage-carousel.json", "webengage", (0..<3).map { "expandableDetails.items[\($0)].image" },
                    ["0", "1", "2"], nil
                ),
                ("expo.json", "expo", ["body._richContent.image"], ["expo_richContent"], nil),
                ("appcues.json", "appcues", ["appcues_attachment_url"], ["appcues_attachment_url"], nil),
                ("mindbox.json", "mindbox", ["imageUrl"], ["imageUrl"], nil),
                ("kumulos.json", "kumulos", ["attachments.pictureUrl"], ["pictureUrl"], nil),
            ]

    @Test("each vendor's fixture attaches, its field and identifier as the vendor names them", arguments: fixtures)
    func attaches(
        fixture: String, convention: String, fields: [String], identifiers: [String], hint: String?
    ) async throws {
        let bed = try TestBed()
        let result = try await enrich(fixture, on: bed)
        #expect(result["outcome"] as? String == "complete", "\(result)")
        let attachments = result["attachments"] as? [[String: Any]] ?? []
        #expect(attachments.map { $0["convention"] as? String } == fields.map { _ in convention })
        #expect(attachments.map { $0["field"] as? String } == fields)
        #expect(attachments.map { $0["identifier"] as? String } == identifiers)
        #expect(attachments.map { $0["type_hint"] as? String } == fields.map { _ in hint })
        #expect((result["problems"] as? [Any])?.isEmpty ?? true, "\(result)")
        #expect(bed.origin.requestLog.count == fields.count, "requests: \(bed.origin.requestLog)")
    }

    @Test(
        "without its vendor's marker the same key fetches nothing",
        arguments: [
            #"{"aps":{"mutable-content":1},"rich-media":"ORIGIN/media/logo.png","rich-media-type":"png"}"#,
            #"{"aps":{"mutable-content":1},"image_url":"ORIGIN/media/logo.png"}"#,
            #"{"aps":{"mutable-content":1},"image":"ORIGIN/media/photo.jpg","source":"another-sender"}"#,
            #"{"aps":{"mutable-content":1},"expandableDetails":{"style":"OVERLAY","image":"ORIGIN/media/photo.jpg"}}"#,
            #"{"aps":{"mutable-content":1},"imageUrl":"ORIGIN/media/photo.jpg"}"#,
            #"{"aps":{"mutable-content":1},"attachments":{"pictureUrl":"ORIGIN/media/photo.jpg"}}"#,
        ])
    func unmarked(payload: String) async throws {
        let bed = try TestBed()
        let run = try await CLI.run(
            ["enrich"] + bed.cliOptions, stdin: payload.replacingOccurrences(of: "ORIGIN", with: bed.url("")))
        #expect(run.status == 0, "\(run.stderr)")
        let result = try #require(run.lines.first)
        #expect(result["outcome"] as? String == "unchanged", "\(result)")
        #expect((result["attachments"] as? [Any])?.isEmpty == true)
        // The CLI has exited: every fetch it would have made has been made.
        #expect(bed.origin.requestLog.isEmpty, "requests: \(bed.origin.requestLog)")
    }

    @Test("Klaviyo's rich-media-type is a type hint: the bytes decide, a disagreement is type-mismatch")
    func klaviyoTypeHint() async throws {
        let bed = try TestBed()
        let result = try await enrich("klaviyo-mismatch.json", on: bed)
        let attachment = try #require((result["attachments"] as? [[String: Any]])?.first)
        #expect(attachment["type"] as? String == "public.jpeg")
        #expect(attachment["type_hint"] as? String == "gif")
        let problems = result["problems"] as? [[String: Any]] ?? []
        #expect(problems.map { $0["code"] as? String } == ["type-mismatch"])
        #expect(problems.first?["source"] as? String == bed.url("/media/photo.jpg"))
        let agreeing = try await enrich("klaviyo.json", on: bed)
        #expect((agreeing["problems"] as? [Any])?.isEmpty ?? true)
    }

    @Test("Kumulos's relative pictureUrl is reported on-device and not fetched")
    func kumulosOnDevice() async throws {
        let bed = try TestBed()
        let result = try await enrich("kumulos-relative.json", on: bed)
        let problems = result["problems"] as? [[String: Any]] ?? []
        #expect(problems.map { $0["code"] as? String } == ["on-device"])
        #expect(problems.first?["source"] as? String == "attachments.pictureUrl")
        #expect(bed.origin.requestLog.isEmpty, "requests: \(bed.origin.requestLog)")
    }

    @Test("explain names every round-three convention, among those not present")
    func explainNames() async throws {
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try await CLI.run(
            ["explain"] + bed.cliOptions + [try bed.payloadFile("no-media.json", directory: directory)])
        #expect(run.status == 0, "\(run.stderr)")
        let line = try #require(run.stdout.split(separator: "\n").first { $0.contains("not present: ") })
        let names = Set(
            line.split(separator: ":", maxSplits: 1)[1].split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            })
        let roundThree = [
            "moengage", "salesforce", "klaviyo", "swrve", "adobe_campaign", "emarsys", "bloomreach", "webengage",
            "expo", "appcues", "mindbox", "kumulos",
        ]
        #expect(roundThree.filter { !names.contains($0) } == [])
        let json = try await CLI.run(
            ["explain", "--json"] + bed.cliOptions + [try bed.payloadFile("klaviyo.json", directory: directory)])
        let conventions = json.lines.first?["conventions"] as? [[String: Any]]
        #expect(conventions?.map { $0["name"] as? String } == ["klaviyo"])
    }
}
