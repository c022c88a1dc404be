import Foundation
import Testing

@testable import RichPush

@Suite("File URLs")
struct FileURLTests {
    @Test(
        "file URLs percent-encode what a URL path cannot hold",
        arguments: [
            ("/tmp/richpush/a/b.jpg", "file:///tmp/richpush/a/b.jpg"),
            ("/tmp/a b/é.jpg", "file:///tmp/a%20b/%C3%A9.jpg"),
            ("/x/%#?.png", "file:///x/%25%23%3F.png"),
        ])
    func fileURLs(path: String, expected: String) {
        #expect(fileURL(path) == expected)
        #expect(URL(string: expected)?.path == path)
    }

    @Test("every ASCII character is kept or percent-encoded as RFC 3986 says of a path (unreserved and / kept)")
    func everyASCIICharacter() {
        var kept = CharacterSet(charactersIn: "-._~/")
        kept.formUnion(CharacterSet(charactersIn: "a"..."z"))
        kept.formUnion(CharacterSet(charactersIn: "A"..."Z"))
        kept.formUnion(CharacterSet(charactersIn: "0"..."9"))
        for scalar in (1..<128).compactMap(Unicode.Scalar.init) {
            let path = "/a/\(Character(scalar))b.jpg"
            let expected = "file://" + path.addingPercentEncoding(withAllowedCharacters: kept)!
            #expect(fileURL(path) == expected, "U+\(String(scalar.value, radix: 16))")
        }
    }
}
