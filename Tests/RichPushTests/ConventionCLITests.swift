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
        let missing = try await CLI.run([
            "render", "--template", FixtureDirectory.root + "/templates/sale.json", "--params", "/nonexistent.json",
        ])
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("--params"))
    }
}
