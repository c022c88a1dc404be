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
}
