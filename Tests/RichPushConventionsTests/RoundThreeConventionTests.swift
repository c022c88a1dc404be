import Foundation
import RichPushCore
import RichPushTestSupport
import Testing

@testable import RichPushConventions

/// Issue 24: the twelve conventions of round three, each as its vendor's SDK reads it.
@Suite("Round three conventions")
struct RoundThreeConventionTests {
    func scan(_ text: String) throws -> ConventionScan {
        ConventionRegistry.standard.scan(try PushPayload(parsing: Array(text.utf8)))
    }

    func scan(fixture name: String) throws -> ConventionScan {
        try scan(String(contentsOfFile: FixtureDirectory.payloads + "/" + name, encoding: .utf8))
    }

    @Test(
        "a generic key is read only with its vendor's marker",
        arguments: [
            (
                #"{"rich-media":"https://k/1.png","rich-media-type":"png","body":{}}"#,
                #"{"rich-media":"https://k/1.png","rich-media-type":"png","body":{"_k":"x"}}"#
            ),
            (#"{"image_url":"https://e/1.png"}"#, #"{"image_url":"https://e/1.png","ems":{}}"#),
            (
                #"{"image":"https://b/1.jpg","source":"other"}"#,
                #"{"image":"https://b/1.jpg","source":"xnpe_platform"}"#
            ),
            (
                #"{"expandableDetails":{"style":"BIG_PICTURE","image":"https://w/1.jpg"}}"#,
                #"{"expandableDetails":{"style":"BIG_PICTURE","image":"https://w/1.jpg"},"source":"webengage"}"#
            ),
            (#"{"imageUrl":"https://m/1.jpg"}"#, #"{"imageUrl":"https://m/1.jpg","uniqueKey":"u-1"}"#),
            (
                #"{"attachments":{"pictureUrl":"https://ku/1.jpg"},"custom":{"a":{}}}"#,
                #"{"attachments":{"pictureUrl":"https://ku/1.jpg"},"custom":{"a":{"k.message":{}}}}"#
            ),
        ])
    func markers(unmarked: String, marked: String) throws {
        let without = try scan(unmarked)
        #expect(without.references.isEmpty)
        #expect(without.problems.isEmpty)
        #expect(try scan(marked).references.count == 1)
    }

    @Test("Mindbox's older format: aps.imageUrl when aps holds uniqueKey")
    func mindboxInsideAPS() throws {
        let result = try scan(#"{"aps":{"uniqueKey":"k","imageUrl":"https://m/1.jpg"},"imageUrl":"https://m/2.jpg"}"#)
        #expect(result.references.map(\.field) == ["aps.imageUrl"])
        #expect(result.references.map(\.url) == ["https://m/1.jpg"])
    }

    @Test("WebEngage: TILES adds a hidden background at 0; BIG_TEXT and an empty image fetch nothing")
    func webEngageStyles() throws {
        let tiles = try scan(
            #"{"source":"webengage","expandableDetails":{"style":"TILES","image":"https://w/bg.jpg","#
                + #""tiles":[{"image":"https://w/1.jpg"},{"text":"no image"},{"image":"https://w/3.jpg"}]}}"#)
        #expect(tiles.references.map(\.identifier) == ["0", "1", "3"])
        #expect(tiles.references.map { $0.thumbnail?.hidden } == [true, nil, nil])
        let text = try scan(
            #"{"source":"webengage","expandableDetails":{"style":"BIG_TEXT","image":"https://w/1.jpg"}}"#)
        #expect(text.references.isEmpty)
        let empty = try scan(#"{"source":"webengage","expandableDetails":{"style":"OVERLAY","image":""}}"#)
        #expect(empty.references.isEmpty)
        #expect(empty.problems.isEmpty)
        let wrong = try scan(#"{"source":"webengage","expandableDetails":{"style":"CAROUSEL_V1","items":[7]}}"#)
        #expect(wrong.problems.map(\.source) == ["expandableDetails.items[0]"])
    }

    @Test("Kumulos: a picture path without http(s) is completed on the phone: on-device, nothing fetched")
    func kumulosRelative() throws {
        let result = try scan(fixture: "kumulos-relative.json")
        #expect(result.references.isEmpty)
        #expect(result.problems.map(\.code) == [.onDevice])
        #expect(result.problems.first?.source == "attachments.pictureUrl")
        #expect(result.problems.first?.detail.contains("kumulos/7b1e/lineup.png") == true)
    }

    @Test(
        "wrong types are bad-reference problems naming the field",
        arguments: [
            (#"{"moengage":{"media-attachment":5}}"#, "moengage.media-attachment"),
            (#"{"body":{"_k":"x"},"rich-media":["https://k/1.png"]}"#, "rich-media"),
            (#"{"_sw":{"media":"https://s/1.gif"}}"#, "_sw.media"),
            (#"{"source":"webengage","expandableDetails":"BIG_PICTURE"}"#, "expandableDetails"),
            (#"{"custom":{"a":{"k.message":{}}},"attachments":{"pictureUrl":3}}"#, "attachments.pictureUrl"),
        ])
    func wrongTypes(text: String, source: String) throws {
        let result = try scan(text)
        #expect(result.references.isEmpty)
        #expect(result.problems.map(\.code) == [.badReference])
        #expect(result.problems.first?.source == source)
    }
}
