import Foundation
import Testing

@testable import RichPush
@testable import RichPushConventions

@Suite("Templates (Azure Notification Hubs expressions)")
struct TemplateTests {
    func render(_ template: String, _ params: String, strict: Bool = false) throws -> String {
        let renderer = try TemplateRenderer(properties: try JSONParser().parse(Array(params.utf8)), strict: strict)
        return JSONWriter.string(try renderer.render(try JSONParser().parse(Array(template.utf8))))
    }

    @Test(
        "each expression form",
        arguments: [
            (##"{"a":"$(name)"}"##, ##"{"a":"Ada Lovelace"}"##),
            (##"{"a":"$(NAME)"}"##, ##"{"a":"Ada Lovelace"}"##),
            (##"{"a":"$(name, 3)"}"##, ##"{"a":"Ada"}"##),
            (##"{"a":".(name, 8)"}"##, ##"{"a":"Ada L..."}"##),
            (##"{"a":".(name, 40)"}"##, ##"{"a":"Ada Lovelace"}"##),
            (##"{"a":".(name)"}"##, ##"{"a":"Ada Lovelace"}"##),
            (##"{"a":"%(name)"}"##, ##"{"a":"Ada%20Lovelace"}"##),
            (##"{"a":"#(count)"}"##, ##"{"a":42}"##),
            (##"{"a":"#(price)"}"##, ##"{"a":1.5e3}"##),
            (##"{"a":"#(name)"}"##, ##"{"a":"Ada Lovelace"}"##),
            (##"{"a":"{'n=' + #(count)}"}"##, ##"{"a":"n=42"}"##),
            (##"{"a":"{$(name, 3) + \" & \" + 'co'}"}"##, ##"{"a":"Ada & co"}"##),
            (##"{"a":"$(missing)"}"##, ##"{"a":""}"##),
            (##"{"a":"Hello $(name)","$(name)":1,"n":[true,"$(name, 1)"]}"##, ##"{"a":"Hello $(name)","$(name)":1,"n":[true,"A"]}"##),
        ])
    func forms(template: String, expected: String) throws {
        #expect(try render(template, ##"{"name":"Ada Lovelace","count":42,"price":"1.5e3"}"##) == expected)
    }

    @Test(
        "a malformed expression is always an error naming it",
        arguments: [
            ##"{"a":"$(name"}"##, ##"{"a":"{$(name) + }"}"##, ##"{"a":"{$(name) 'x'}"}"##, ##"{"a":"$(name, x)"}"##,
            ##"{"a":"{'open}"}"##, ##"{"a":"%(name, 3)"}"##, ##"{"a":"$(na me)"}"##, ##"{"a":"{not json}"}"##,
        ])
    func malformed(template: String) {
        do {
            _ = try render(template, ##"{"name":"Ada"}"##)
            Issue.record("accepted \(template)")
        } catch {
            #expect((error as? TemplateError)?.message.hasPrefix("malformed expression") == true, "\(error)")
        }
    }

    @Test(
        "strings that are not, as a whole, an expression are left alone",
        arguments: [
            ##"{"a":"$(name) and more"}"##, ##"{"a":"{}"}"##, ##"{"a":" { } "}"##, ##"{"a":"{\"k\":\"$(name)\"}"}"##,
            ##"{"payload":"just words $(name)"}"##, ##"{"notifee_options":"{}"}"##,
            ##"{"payload":"{ \"image_attachment\" : \"https://z/1.png\" }"}"##,
            ##"{"deep":{"payload":"{\"image_attachment\":\"$(name)\"}"}}"##,
        ])
    func leftAlone(template: String) throws {
        #expect(try render(template, ##"{"name":"Ada"}"##, strict: true) == template)
    }

    @Test("ZEGOCLOUD's and Notifee's JSON-string objects are rendered inside and encoded again")
    func jsonStrings() throws {
        let rendered = try render(
            ##"{"payload":"{\"image_attachment\":\"$(img)\",\"n\":\"#(n)\"}","notifee_options":"{\"body\":\"{'Hi ' + $(name)}\"}"}"##,
            ##"{"img":"https://z/1.png","n":3,"name":"Ada"}"##)
        #expect(rendered == ##"{"payload":"{\"image_attachment\":\"https://z/1.png\",\"n\":3}","notifee_options":"{\"body\":\"Hi Ada\"}"}"##)
        // A malformed expression inside is an error too.
        #expect(throws: TemplateError.self) { try render(##"{"payload":"{\"a\":\"$(img\"}"}"##, "{}") }
    }

    @Test(
        "lengths count UTF-16 code units, as .NET does; a surrogate pair is never split",
        arguments: [
            ("$(s, 12)", "Zoë 👩‍💻 Ko"), ("$(s, 5)", "Zoë "), ("$(s, 6)", "Zoë 👩"), (".(s, 8)", "Zoë ..."),
            (".(s, 18)", "Zoë 👩‍💻 Kowalski"), (".(s, 17)", "Zoë 👩‍💻 Kowa..."),
        ])
    func utf16Lengths(expression: String, expected: String) throws {
        let renderer = try TemplateRenderer(properties: try JSONParser().parse(Array(##"{"s":"Zoë 👩‍💻 Kowalski"}"##.utf8)))
        #expect(try renderer.evaluate(expression)?.stringValue == expected)
    }

    @Test("the CLI renders the JSON-strings fixture: enrich finds ZEGOCLOUD's and Notifee's media in it")
    func cliJSONStrings() async throws {
        let run = try await CLI.run([
            "render", "--strict", "--template", FixtureDirectory.root + "/templates/json-strings.json",
            "--params", FixtureDirectory.root + "/templates/json-strings-params.json",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let payload = try PushPayload(parsing: Array(run.stdout.utf8.dropLast()))
        let scan = ConventionRegistry.standard.scan(payload)
        #expect(scan.references.map(\.convention) == ["zego", "notifee"])
        #expect(scan.references.map(\.url) == [
            "http://media.example.com:8787/media/anim.gif", "http://media.example.com:8787/media/logo.png",
        ])
        #expect(scan.overrides.first?.title == "Zoë ...")
        let alert = payload.root["aps"]?.objectValue?["alert"]?.objectValue
        #expect(alert?["title"]?.stringValue == "Zoë 👩‍💻 Ko")
        #expect(alert?["body"]?.stringValue == "$(caller) and more are calling")
        #expect(payload.root["extra"]?.stringValue == ##"{"keep":"$(img)"}"##)
        #expect(payload.root["empty"]?.stringValue == "{}")
    }

    @Test("--strict turns a missing property into an error naming it")
    func strict() throws {
        let missing = [(##"{"a":"$(who)"}"##, ##"{"a":""}"##), (##"{"a":"{'x' + $(who)}"}"##, ##"{"a":"x"}"##)]
        for (template, lenient) in missing {
            let error = #expect(throws: TemplateError.self) { try render(template, "{}", strict: true) }
            #expect(error?.message.contains("'who'") == true, "\(template): \(String(describing: error))")
            #expect(try render(template, "{}") == lenient)
        }
        #expect(throws: TemplateError.self) { try render(##"{"a":"$(x)"}"##, ##"{"x":{"deep":1}}"##) }
    }

    @Test("the CLI renders the fixture into a payload enrich accepts")
    func cli() async throws {
        let run = try await CLI.run([
            "render", "--template", FixtureDirectory.root + "/templates/sale.json",
            "--params", FixtureDirectory.root + "/templates/sale-params.json",
        ])
        #expect(run.status == 0)
        #expect(run.stdout == ##"{"aps":{"alert":{"title":"Weekend sale starts ","body":"Hi Ada, Everything thirty per..."},"badge":3,"mutable-content":1},"adb_media":"http://media.example.com:8787/media/photo.jpg","campaign":"spring-2026"}"## + "\n")
        let payload = try PushPayload(parsing: Array(run.stdout.utf8.dropLast()))
        #expect(ConventionRegistry.standard.scan(payload).references.count == 1)
        let missing = try await CLI.run(["render", "--template", FixtureDirectory.root + "/templates/sale.json", "--params", "/nonexistent.json"])
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("--params"))
    }
}
