import Foundation
import RichPushCore
import RichPushTestSupport
import Testing

@testable import RichPushConventions

@Suite("User-defined conventions (--conventions FILE)")
struct ConventionFileTests {
    @Test("a valid file gives key-path conventions, with @json steps and hints")
    func valid() throws {
        let text = #"""
            {"conventions":[
              {"name":"acme","url":["acme","media","url"],"hint":["acme","media","type"],"identifier":"hero"},
              {"name":"legacy","url":["extra","@json","image"]}
            ]}
            """#
        let conventions = try ConventionFile.parse(Array(text.utf8))
        #expect(conventions.map(\.name) == ["acme", "legacy"])
        var registry = ConventionRegistry([])
        for convention in conventions { registry.register(convention) }
        let payload = try PushPayload(
            parsing: Array(
                (#"{"acme":{"media":{"url":"https://a/1.jpg","type":"image"}},"#
                    + #""extra":"{\"image\":\"https://l/2.png\"}"}"#).utf8))
        let scan = registry.scan(payload)
        #expect(scan.references.map(\.url) == ["https://a/1.jpg", "https://l/2.png"])
        #expect(scan.references.map(\.identifier) == ["hero", "legacy"])
        #expect(scan.references.map(\.typeHint) == ["image", nil])
        #expect(scan.references.map(\.field) == ["acme.media.url", "extra.@json.image"])
    }

    @Test(
        "a bad file is refused with the entry and field named",
        arguments: [
            ("[]", "\"conventions\" array"),
            ("{", "not JSON"),
            (#"{"conventions":[7]}"#, "conventions[0]: expected an object"),
            (#"{"conventions":[{"url":["a"]}]}"#, "conventions[0]: \"name\""),
            (#"{"conventions":[{"name":"Bad Name","url":["a"]}]}"#, "conventions[0]: \"name\""),
            (#"{"conventions":[{"name":"zego","url":["a"]}]}"#, "conventions[0] (zego): the name is already taken"),
            (#"{"conventions":[{"name":"a","url":["x"]},{"name":"a","url":["y"]}]}"#, "conventions[1] (a): the name"),
            (#"{"conventions":[{"name":"a"}]}"#, "conventions[0] (a): \"url\" is required"),
            (#"{"conventions":[{"name":"a","url":[]}]}"#, "conventions[0] (a): \"url\" must be"),
            (#"{"conventions":[{"name":"a","url":["x",3]}]}"#, "conventions[0] (a): \"url\" must be"),
            (#"{"conventions":[{"name":"a","url":["x","@json"]}]}"#, "cannot end with"),
            (#"{"conventions":[{"name":"a","url":["x"],"hint":"t"}]}"#, "conventions[0] (a): \"hint\" must be"),
            (#"{"conventions":[{"name":"a","url":["x"],"identifier":""}]}"#, "\"identifier\""),
            (#"{"conventions":[{"name":"a","url":["x"],"urls":["y"]}]}"#, "unknown field \"urls\""),
        ])
    func invalid(text: String, message: String) {
        do {
            _ = try ConventionFile.parse(Array(text.utf8))
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.detail.contains(message), "\(error.detail)")
        }
    }
}
