import Foundation
import Testing

@testable import RichPush

@Suite("Names and file URLs")
struct NameTests {
    @Test("random names are version-4 UUIDs, lowercase, distinct")
    func randomNames() {
        let names = (0..<1000).map { _ in RandomName.uuid() }
        #expect(Set(names).count == 1000)
        for name in names.prefix(50) {
            let parsed = UUID(uuidString: name)
            #expect(parsed != nil)
            #expect(parsed?.uuidString.lowercased() == name)
            #expect(Array(name)[14] == "4")
            #expect("89ab".contains(Array(name)[19]))
        }
    }

    @Test("file URLs percent-encode what a URL path cannot hold", arguments: [
        ("/tmp/richpush/a/b.jpg", "file:///tmp/richpush/a/b.jpg"),
        ("/tmp/a b/é.jpg", "file:///tmp/a%20b/%C3%A9.jpg"),
        ("/x/%#?.png", "file:///x/%25%23%3F.png"),
    ])
    func fileURLs(path: String, expected: String) {
        #expect(fileURL(path) == expected)
        #expect(URL(string: expected)?.path == path)
    }
}
