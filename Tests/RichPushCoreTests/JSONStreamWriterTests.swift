import Testing

@testable import RichPushCore

@Suite("JSONStreamWriter: the bytes JSONWriter writes for the same tree")
struct JSONStreamWriterTests {
    /// Integers at the edges of every digit count and sign, as `String(_:)` writes them.
    static let integers: [Int] =
        [
            0, 1, -1, 9, 10, -10, 99, 100, 12_345, -98_765, Int(Int32.max), Int(Int32.min), .max, .min, .max - 1,
            .min + 1,
        ]
        + (0..<19).map { Int(pow10($0)) } + (0..<19).map { -Int(pow10($0)) + 1 }

    static func pow10(_ exponent: Int) -> Int64 { (0..<exponent).reduce(1) { result, _ in result * 10 } }

    @Test("an integer is written as String(_:) writes it", arguments: integers)
    func integer(value: Int) {
        var writer = JSONStreamWriter(capacity: 0)
        writer.integer(value)
        #expect(writer.bytes == Array(String(value).utf8))
        var bytes: [UInt8] = [1, 2]
        JSONWriter.writeInteger(value, into: &bytes)
        #expect(bytes == [1, 2] + Array(String(value).utf8))
    }

    @Test(
        "tenths are written as \"\\(t / 10).\\(t % 10)\"",
        arguments: [0, 1, 9, 10, 11, 125, 99_999, 1_234_567_890, -1, -15, .max, .min])
    func tenths(value: Int) {
        var writer = JSONStreamWriter(capacity: 0)
        writer.tenths(value)
        #expect(String(decoding: writer.bytes, as: UTF8.self) == "\(value / 10).\(value % 10)")
    }

    /// Strings with every escape `JSONWriter` makes, and none.
    static let strings = [
        "", "plain", "a \"quote\"", #"back\slash"#, "line\nfeed", "cr\rtab\t", "\u{0}\u{1}\u{1f}\u{7f}", "é日本🎉",
        "/tmp/a b/%#?.jpg", "\u{2028}\u{2029}",
    ]

    @Test("objects, arrays and values nest with the commas JSONWriter puts", arguments: strings)
    func nested(text: String) throws {
        let parsed = try JSONParser().parse(Array(#"{"a": [1, 2.50, {"b": "\u00e9"}], "c": {}}"#.utf8))
        let tree = PushPayload.JSON.object(
            JSONObject([
                ("s", .text(text)), ("empty", .array([])), ("none", .object(JSONObject())),
                ("list", .array([.text(text), .integer(-3), .bool(true), .null, .array([.object(JSONObject())])])),
                ("object", .object(JSONObject([("t", .text(text)), ("f", .bool(false))]))),
                ("parsed", parsed), ("n", .integer(42)),
            ]))
        var writer = JSONStreamWriter(capacity: 16)
        writer.openObject()
        writer.member("s", text)
        writer.key("empty")
        writer.openArray()
        writer.closeArray()
        writer.key("none")
        writer.openObject()
        writer.closeObject()
        writer.key("list")
        writer.openArray()
        writer.string(text)
        writer.integer(-3)
        writer.bool(true)
        writer.null()
        writer.openArray()
        writer.openObject()
        writer.closeObject()
        writer.closeArray()
        writer.closeArray()
        writer.key("object")
        writer.openObject()
        writer.member("t", text)
        writer.key("f")
        writer.bool(false)
        writer.closeObject()
        writer.member("parsed", parsed)
        writer.member("n", 42)
        writer.closeObject()
        #expect(
            String(decoding: writer.bytes, as: UTF8.self) == JSONWriter.string(tree),
            "\(String(decoding: writer.bytes, as: UTF8.self))")
    }

    @Test("a raw byte after a value is not preceded by a comma, and resets the separator")
    func raw() {
        var writer = JSONStreamWriter(capacity: 0)
        writer.openObject()
        writer.closeObject()
        writer.raw(0x0A)
        writer.openArray()
        writer.closeArray()
        #expect(writer.bytes == Array("{}\n[]".utf8))
    }
}
