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
        registry.register(contentsOf: conventions)
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
        refused(text, message)
    }

    @Test("a file saved with a UTF-8 byte-order mark is read, as a payload is")
    func byteOrderMark() throws {
        let text = #"{"conventions":[{"name":"acme","url":["acme","media","url"]}]}"#
        let conventions = try ConventionFile.parse([0xEF, 0xBB, 0xBF] + Array(text.utf8))
        #expect(conventions.map(\.name) == ["acme"])
    }

    @Test("a field given twice in an entry, or \"conventions\" twice, is refused: which one counts is not guessed")
    func repeatedField() throws {
        refused(
            #"{"conventions":[{"name":"acme","name":"other","url":["acme","url"]}]}"#,
            #"conventions[0]: "name" is given twice"#)
        refused(
            #"{"conventions":[{"name":"a","url":["a"]},{"name":"b","url":["b"],"url":["c"]}]}"#,
            #"conventions[1]: "url" is given twice"#)
        refused(
            #"{"conventions":[{"name":"a","url":["a"]}],"conventions":[{"name":"b","url":["b"]}]}"#,
            #""conventions" is given twice"#)
        // Keys that differ only in how they are escaped are one key.
        refused(
            #"{"conventions":[{"name":"a","n\u0061me":"b","url":["a"]}]}"#, #"conventions[0]: "name" is given twice"#)
    }

    @Test("a file declares at most 256 conventions")
    func count() throws {
        let entries = { (count: Int) in
            #"{"conventions":["# + (0..<count).map { #"{"name":"c\#($0)","url":["k\#($0)"]}"# }.joined(separator: ",")
                + "]}"
        }
        #expect(try ConventionFile.parse(Array(entries(256).utf8)).count == 256)
        refused(entries(257), "\"conventions\" has 257 entries; a file declares at most 256")
    }

    @Test("register(contentsOf:) adds in order, and a name held or added earlier is replaced in place")
    func registerMany() {
        var registry = ConventionRegistry([KeyPathConvention(name: "a", path: ["a"], identifier: "a")])
        registry.register(contentsOf: [
            KeyPathConvention(name: "b", path: ["b"], identifier: "b"),
            KeyPathConvention(name: "a", path: ["a2"], identifier: "a2"),
            KeyPathConvention(name: "c", path: ["c"], identifier: "c"),
            KeyPathConvention(name: "b", path: ["b2"], identifier: "b2"),
        ])
        #expect(registry.conventions.map(\.name) == ["a", "b", "c"])
        #expect(registry.conventions.compactMap { ($0 as? KeyPathConvention)?.identifier } == ["a2", "b2", "c"])
    }

    private func refused(_ text: String, _ message: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            _ = try ConventionFile.parse(Array(text.utf8))
            Issue.record("accepted: \(text.prefix(200))", sourceLocation: sourceLocation)
        } catch {
            #expect(error.detail.contains(message), "\(error.detail)", sourceLocation: sourceLocation)
        }
    }
}
