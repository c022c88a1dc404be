import Foundation
import Testing

@testable import RichPushCore

@Suite("Exact strings")
struct ExactStringTests {
    /// Two texts of the same UTF-8 length that Swift's `==` calls equal (combining marks in either canonical order),
    /// and so differ only where a comparison of bytes looks.
    static let marksOneWay = "https://cdn.test/e\u{301}\u{323}.png"
    static let marksOtherWay = "https://cdn.test/e\u{323}\u{301}.png"

    @Test("the same bytes are the same; equal lengths of other bytes, and canonically equal texts, are not")
    func sameBytes() {
        #expect(Self.marksOneWay == Self.marksOtherWay, "Swift's equality, which these keys must not use")
        #expect(Self.marksOneWay.utf8.count == Self.marksOtherWay.utf8.count)
        #expect(!ExactString.same(Self.marksOneWay, Self.marksOtherWay))
        #expect(ExactString.same(Self.marksOneWay, String(decoding: Array(Self.marksOneWay.utf8), as: UTF8.self)))
        #expect(ExactString.same("", ""))
        #expect(!ExactString.same("", "a"))
        #expect(!ExactString.same("https://m0.test/u/0001.jpg", "https://m0.test/u/0002.jpg"))
        #expect(!ExactString.same("https://m0.test/u/0001.jpg", "https://m0.test/u/0001.jpg "))
        // A small string (stored inline) against a large one of the same bytes, and a bridged Foundation string.
        let long = String(repeating: "x", count: 200)
        #expect(ExactString.same(String(long.prefix(10)), "xxxxxxxxxx"))
        #expect(ExactString.same(long, NSString(string: long) as String))
        #expect(!ExactString.same(long, NSString(string: long + "y") as String))
    }

    @Test("as dictionary keys, canonically equal URLs of the same length are two keys, each found by its bytes")
    func dictionaryKeys() {
        var entries: [ExactString: Int] = [:]
        for index in 0..<500 { entries[ExactString("https://m0.test/u/\(1000 + index).jpg")] = index }
        entries[ExactString(Self.marksOneWay)] = -1
        entries[ExactString(Self.marksOtherWay)] = -2
        #expect(entries.count == 502)
        #expect(entries[ExactString(Self.marksOneWay)] == -1)
        #expect(entries[ExactString(Self.marksOtherWay)] == -2)
        #expect(entries[ExactString("https://m0.test/u/1499.jpg")] == 499)
        #expect(entries[ExactString("https://m0.test/u/1500.jpg")] == nil)
    }
}
