import Foundation
import Testing

@testable import RichPush

@Suite("Routes")
struct RouteTests {
    func route(_ text: String, keys: Route.Keys = Route.Keys()) throws -> Route? {
        let payload = try Payload(parsing: Array(text.utf8))
        let registry = ConventionRegistry.standard
        let scan = registry.scan(payload)
        let matched = registry.conventions.filter { c in scan.references.contains { $0.convention == c.name } }
        return Route.find(in: payload, conventions: matched, keys: keys)
    }

    @Test(
        "the route comes from the matched conventions' custom data, then the root",
        arguments: [
            (#"{"com.batch":{"l":"app://match/7","at":{"u":"https://b/1.jpg","t":"public.jpeg"}}}"#, nil as String?, "app://match/7" as String?),
            (#"{"CIO":{"push":{"link":"app://welcome","image":"https://c/1.jpg"}}}"#, nil, "app://welcome"),
            (#"{"att":{"a":"https://o/1.png"},"custom":{"a":{"id":42,"deeplink":"app://o"}}}"#, "42", "app://o"),
            (#"{"payload":"{\"image_attachment\":\"https://z/1.png\",\"id\":\"call-9\"}"}"#, "call-9", nil),
            (#"{"adb_media":"https://a/1.jpg","id":"sale-1","uri":"app://sale"}"#, "sale-1", "app://sale"),
            (#"{"adb_media":"https://a/1.jpg"}"#, nil, nil),
        ])
    func found(text: String, id: String?, url: String?) throws {
        let found = try route(text)
        #expect(found?.id == id)
        #expect(found?.url == url)
    }

    @Test("a convention's custom data wins over the root, and keys are configurable")
    func precedenceAndKeys() throws {
        let text = #"{"CIO":{"push":{"link":"app://inner","image":"https://c/1.jpg"}},"link":"app://root","ref":"r-1"}"#
        #expect(try route(text)?.url == "app://inner")
        var keys = Route.Keys()
        keys.id = ["ref"]
        keys.url = ["nope"]
        let custom = try route(text, keys: keys)
        #expect(custom?.id == "r-1")
        #expect(custom?.url == nil)
    }

    @Test("the result carries the route; the CLI keys replace the defaults")
    func output() async throws {
        let bed = try TestBed()
        let payload = #"{"aps":{"mutable-content":1},"adb_media":"\#(bed.url("/media/logo.png"))","deeplink":"app://x","ref":"9"}"#
        let run = try await CLI.run(["enrich"] + bed.cliOptions, stdin: payload)
        #expect((run.lines.first?["route"] as? [String: Any])?["url"] as? String == "app://x")
        let keyed = try await CLI.run(["enrich", "--route-id-key", "ref", "--route-url-key", "none"] + bed.cliOptions, stdin: payload)
        let route = keyed.lines.first?["route"] as? [String: Any]
        #expect(route?["id"] as? String == "9")
        #expect(route?["url"] == nil)
    }
}
