import Foundation
import Testing

@testable import RichPush

@Suite("Conventions")
struct ConventionTests {
    func scan(_ text: String) throws -> ConventionScan {
        ConventionRegistry.standard.scan(try Payload(parsing: Array(text.utf8)))
    }

    @Test("Adobe: top-level adb_media")
    func adobe() throws {
        let result = try scan(#"{"aps":{},"adb_media":"https://cdn.example/a.jpg"}"#)
        #expect(result.references == [
            MediaReference(url: "https://cdn.example/a.jpg", convention: "adb_media", identifier: "adb_media", field: "adb_media")
        ])
        #expect(result.problems.isEmpty)
    }

    @Test(
        "ZEGOCLOUD: payload as a JSON string or an object",
        arguments: [
            #"{"payload":"{\"image_attachment\":\"https://z.example/i.png\",\"x\":1}"}"#,
            #"{"payload":{"image_attachment":"https://z.example/i.png"}}"#,
        ])
    func zego(text: String) throws {
        let result = try scan(text)
        #expect(result.references.map(\.url) == ["https://z.example/i.png"])
        #expect(result.references.first?.convention == "zego")
        #expect(result.references.first?.field == "payload.image_attachment")
    }

    @Test(
        "no media is not a problem",
        arguments: [
            #"{"aps":{"alert":"x"}}"#,
            #"{"payload":"just words"}"#,
            #"{"payload":"[1,2]"}"#,
            #"{"payload":"{\"other\":1}"}"#,
            #"{"payload":42}"#,
        ])
    func nothing(text: String) throws {
        let result = try scan(text)
        #expect(result.references.isEmpty)
        #expect(result.problems.isEmpty)
    }

    @Test(
        "a field of the wrong type is a bad-reference problem naming it",
        arguments: [
            (#"{"adb_media":42}"#, "adb_media holds a number"),
            (#"{"adb_media":{"url":"x"}}"#, "adb_media holds an object"),
            (#"{"payload":{"image_attachment":["x"]}}"#, "payload.image_attachment holds an array"),
            (#"{"payload":"{\"image_attachment\":null}"}"#, "payload.image_attachment holds null"),
        ])
    func wrongType(text: String, detail: String) throws {
        let result = try scan(text)
        #expect(result.references.isEmpty)
        #expect(result.problems.map(\.code) == [.badReference])
        #expect(result.problems.first?.detail.hasPrefix(detail) == true)
    }

    @Test("several references are kept in registry order; the same URL once")
    func order() throws {
        let result = try scan(
            #"{"payload":{"image_attachment":"https://b/2.png"},"adb_media":"https://a/1.jpg"}"#)
        #expect(result.references.map(\.url) == ["https://a/1.jpg", "https://b/2.png"])
        let same = try scan(#"{"payload":{"image_attachment":"https://a/1.jpg"},"adb_media":"https://a/1.jpg"}"#)
        #expect(same.references.map(\.convention) == ["adb_media"])
    }

    struct Custom: MediaConvention {
        var name: String { "custom" }
        func scan(_ payload: Payload) -> ConventionScan {
            var scan = ConventionScan()
            scan.take(payload.root["media"], field: "media", convention: name, identifier: "adb_media")
            return scan
        }
    }

    @Test("a registered convention runs after the others, identifiers stay unique")
    func custom() throws {
        var registry = ConventionRegistry.standard
        registry.register(Custom())
        let payload = try Payload(parsing: Array(#"{"media":"https://c/3.gif","adb_media":"https://a/1.jpg"}"#.utf8))
        let result = registry.scan(payload)
        #expect(result.references.map(\.url) == ["https://a/1.jpg", "https://c/3.gif"])
        #expect(result.references.map(\.identifier) == ["adb_media", "adb_media-2"])
    }
}
