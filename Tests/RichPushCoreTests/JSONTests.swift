import Foundation
import RichPushTestSupport
import Testing

@testable import RichPushCore

@Suite("Lossless JSON")
struct JSONTests {
    func roundTrip(_ text: String) throws -> String {
        JSONWriter.string(try JSONParser().parse(Array(text.utf8)))
    }

    @Test(
        "compact JSON survives a round trip exactly",
        arguments: [
            #"{"aps":{"mutable-content":1,"alert":"x"}}"#,
            #"{"n":1.0,"m":-0.0,"e":1E+400,"big":123456789012345678901234567890,"f":0.000001e-7}"#,
            #"{"s":"caf\u00e9 \ud83d\ude00","t":"tab\there \"q\" \/","lone":"\ud800","raw":"é😀"}"#,
            #"{"dup":1,"dup":2,"z":0,"a":0}"#,
            #"{"empty":{},"list":[],"nested":[[{"a":[null,true,false]}]]}"#,
            #"{"ctl":"\u0000\u001f"}"#,
        ])
    func roundTripExact(_ text: String) throws {
        #expect(try roundTrip(text) == text)
    }

    @Test(
        "white space is dropped, nothing else changes",
        arguments: [
            (" {\n \"a\" : [ 1 , 2 ]\t}\r\n", #"{"a":[1,2]}"#),
            ("\n {\"a\":[1,{},[]],\"b\":{\"c\":\" \"}} \n", #"{"a":[1,{},[]],"b":{"c":" "}}"#),
            ("[ {\"k\" :\"v\\\" \"} , -1.5e3 ,null]", #"[{"k":"v\" "},-1.5e3,null]"#),
        ])
    func whitespace(text: String, compact: String) throws {
        #expect(try roundTrip(text) == compact)
        // Each member of a parsed object is written the same on its own, as a built object's member.
        let value = try JSONParser().parse(Array(text.utf8))
        if case .object(var object) = value {
            object.set("added", .null)
            #expect(JSONWriter.string(.object(object)) == String(compact.dropLast()) + #","added":null}"#)
        }
    }

    @Test("the lossless fixture comes back byte for byte")
    func fixtureRoundTrip() throws {
        let path = FixtureDirectory.payloads + "/lossless.json"
        let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .newlines)
        #expect(try roundTrip(text) == text)
    }

    @Test("decoded values are what the escapes mean")
    func decoding() throws {
        let value = try JSONParser().parse(Array(#"{"s":"a\u00e9\n\ud83d\ude00","lone":"x\udc00y"}"#.utf8))
        #expect(value.objectValue?["s"]?.stringValue == "aé\n😀")
        #expect(value.objectValue?["lone"]?.stringValue == "x\u{FFFD}y")
    }

    @Test(
        "keys keep their escapes, as string values do",
        arguments: [
            #"{"adb\u005fmedia":"https://example.com/a.jpg"}"#,
            #"{"\ud800":1,"\udfff":2}"#,
            #"{"caf\u00e9":1,"café":2,"tab\t\"q\"\/":3,"\ud83d\ude00":4}"#,
        ])
    func keysRoundTrip(_ text: String) throws {
        #expect(try roundTrip(text) == text)
    }

    @Test("two keys that differ only in lone surrogates stay two members, each as written, until one is set")
    func loneSurrogateKeys() throws {
        let text = #"{"\ud800":"high","\udfff":"low"}"#
        let object = try #require(try JSONParser().parse(Array(text.utf8)).objectValue)
        #expect(object.members.map(\.key.literal) == [#"\ud800"#, #"\udfff"#])
        #expect(object.members.map(\.value.stringValue) == ["high", "low"])
        // Setting one by its decoded name (both decode to U+FFFD) sets the last, its key as written, and drops the
        // earlier one: a key set is written once (duplicates set each had let an output grow without bound).
        var changed = object
        changed.set("\u{FFFD}", .text("x"))
        #expect(JSONWriter.string(.object(changed)) == #"{"\udfff":"x"}"#)
    }

    @Test("a key given many times and set is written once, at its last place; the other members stay in order")
    func setDuplicates() throws {
        let text = #"{"a":1,"m":{},"b":2,"\u006d":{},"c":3,"m":{"x":1}}"#
        var object = try #require(try JSONParser().parse(Array(text.utf8)).objectValue)
        object.set("m", .text("new"))
        #expect(JSONWriter.string(.object(object)) == #"{"a":1,"b":2,"c":3,"m":"new"}"#)
        var once = try #require(try JSONParser().parse(Array(#"{"a":1,"m":2}"#.utf8)).objectValue)
        once.set("m", .integer(3))
        once.set("z", .integer(4))
        #expect(JSONWriter.string(.object(once)) == #"{"a":1,"m":3,"z":4}"#)
    }

    @Test("keys match scalar by scalar, as the iPhone's userInfo does: a decomposed é is another key")
    func keysMatchByScalars() throws {
        let object = try #require(try JSONParser().parse(Array(#"{"e\u0301":1,"\u00e9":2}"#.utf8)).objectValue)
        #expect(object["\u{E9}"] == .number("2"))
        #expect(object["e\u{301}"] == .number("1"))
    }

    @Test("a name holding a quote matches only a key that holds one: not an unescaped key and the quote after it")
    func namesWithQuotes() throws {
        let object = try #require(try JSONParser().parse(Array(#"{"a":"u","b\"":2}"#.utf8)).objectValue)
        #expect(object["a\":"] == nil)
        #expect(object["a\""] == nil)
        #expect(object["a"] == .string(JSONString("u")))
        #expect(object["b\""] == .number("2"))
    }

    @Test("strings made in code are escaped minimally")
    func writing() {
        let value = PushPayload.JSON.object(JSONObject([("k", .text("a\"b\\c\nd\u{01}é"))]))
        #expect(JSONWriter.string(value) == #"{"k":"a\"b\\c\nd\u0001é"}"#)
    }

    static let invalid: [(text: String, code: EnrichmentProblem.Code)] = [
        ("", .notJSON),
        ("{", .notJSON),
        (#"{"a":1,}"#, .notJSON),
        (#"{"a":01}"#, .notJSON),
        (#"{"a":1.}"#, .notJSON),
        (#"{"a":"\x"}"#, .notJSON),
        ("{\"a\":\"\u{01}\"}", .notJSON),
        (#"{"a":tru}"#, .notJSON),
        (#"{"a":1} x"#, .notJSON),
        (#"{'a':1}"#, .notJSON),
        (String(repeating: "[", count: 65) + String(repeating: "]", count: 65), .tooDeep),
    ]

    @Test("bad JSON gets a specific code", arguments: invalid)
    func rejects(text: String, code: EnrichmentProblem.Code) {
        #expect(throws: PayloadError.self) { try JSONParser().parse(Array(text.utf8)) }
        do {
            _ = try JSONParser().parse(Array(text.utf8))
        } catch {
            #expect(error.code == code)
        }
    }

    @Test("a payload after a UTF-8 byte-order mark is read, the mark passed over; a mark elsewhere is not JSON")
    func byteOrderMark() throws {
        let mark: [UInt8] = [0xEF, 0xBB, 0xBF]
        let payload = try PushPayload(parsing: mark + Array(#"{"aps":{"mutable-content":1}}"#.utf8))
        #expect(payload.isMutable)
        #expect(JSONWriter.string(payload.json) == #"{"aps":{"mutable-content":1}}"#)
        #expect(throws: PayloadError.self) { try PushPayload(parsing: Array("{}".utf8) + mark) }
        #expect(throws: PayloadError.self) { try PushPayload(parsing: mark + mark + Array("{}".utf8)) }
    }

    @Test("64 levels are accepted, 65 are not")
    func depthBoundary() throws {
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        _ = try JSONParser().parse(Array(ok.utf8))
    }

    @Test("invalid UTF-8 and oversized inputs are refused before parsing")
    func bytesLimits() throws {
        #expect(throws: PayloadError(.invalidUTF8, "the input is not valid UTF-8 (byte offset 6)")) {
            try JSONParser().parse([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D])
        }
        var limits = JSONParser.Limits()
        limits.maximumBytes = 10
        #expect(throws: PayloadError.self) { try JSONParser(limits: limits).parse(Array(#"{"a":"0123456789"}"#.utf8)) }
    }

    @Test("a payload must be an object")
    func payloadIsObject() {
        #expect(throws: PayloadError.self) { try PushPayload(parsing: Array("[1]".utf8)) }
        do {
            _ = try PushPayload(parsing: Array("\"text\"".utf8))
        } catch {
            #expect(error.code == .notObject)
            #expect(error.detail.contains("a string"))
        }
    }

    @Test(
        "mutable-content is 1 only when it says 1",
        arguments: [
            (#"{"aps":{"mutable-content":1}}"#, true),
            (#"{"aps":{"mutable-content":1.0}}"#, true),
            (#"{"aps":{"mutable-content":0}}"#, false),
            (#"{"aps":{"mutable-content":true}}"#, false),
            (#"{"aps":{"mutable-content":"1"}}"#, false),
            (#"{"aps":"x"}"#, false),
            (#"{}"#, false),
        ])
    func mutable(text: String, expected: Bool) throws {
        #expect(try PushPayload(parsing: Array(text.utf8)).isMutable == expected)
    }
}
