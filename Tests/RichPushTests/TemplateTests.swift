import Foundation
import Testing

@testable import RichPush

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
            ##"{"a":"{'open}"}"##, ##"{"a":"%(name, 3)"}"##, ##"{"a":"$(na me)"}"##, ##"{"a":"$(name) trailing"}"##,
        ])
    func malformed(template: String) {
        do {
            _ = try render(template, ##"{"name":"Ada"}"##)
            Issue.record("accepted \(template)")
        } catch {
            #expect((error as? TemplateError)?.message.hasPrefix("malformed expression") == true, "\(error)")
        }
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
        let payload = try Payload(parsing: Array(run.stdout.utf8.dropLast()))
        #expect(ConventionRegistry.standard.scan(payload).references.count == 1)
        let missing = try await CLI.run(["render", "--template", FixtureDirectory.root + "/templates/sale.json", "--params", "/nonexistent.json"])
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("--params"))
    }
}
