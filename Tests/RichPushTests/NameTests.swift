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

@Suite("File system helpers")
struct FileSystemTests {
    @Test("removeTree removes a link, never what it points to")
    func removeTreeKeepsLinkTargets() throws {
        let root = try temporaryDirectory()
        let outside = try temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: root)
            try? FileManager.default.removeItem(atPath: outside)
        }
        FileManager.default.createFile(atPath: outside + "/keep.jpg", contents: Data([1, 2, 3]))
        try FileManager.default.createDirectory(atPath: root + "/a/b", withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: root + "/a/b/x.jpg", contents: Data([1]))
        try FileManager.default.createSymbolicLink(atPath: root + "/a/link", withDestinationPath: outside)
        #expect(try Directory(opening: root).removeTree("a"))
        #expect(!FileManager.default.fileExists(atPath: root + "/a"))
        #expect(FileManager.default.fileExists(atPath: outside + "/keep.jpg"))
    }

    @Test("makeDirectories makes missing parents with the mode, and accepts an existing directory")
    func makeDirectories() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(FileSystem.makeDirectories(root + "/x/y/z", mode: 0o700))
        let mode = try FileManager.default.attributesOfItem(atPath: root + "/x/y")[.posixPermissions] as? Int
        #expect(mode == 0o700)
        #expect(FileSystem.makeDirectories(root + "/x/y/z", mode: 0o700))
        FileManager.default.createFile(atPath: root + "/file", contents: Data())
        #expect(!FileSystem.makeDirectories(root + "/file", mode: 0o700))
        #expect(try Directory(opening: root + "/x").names() == ["y"])
    }

    @Test("UUID shapes", arguments: [("0f9d2c4e-1b2a-4c3d-8e9f-0a1b2c3d4e5f", true), ("0F9D2C4E-1B2A-4C3D-8E9F-0A1B2C3D4E5F", true),
        ("keep-me", false), ("0f9d2c4e1b2a4c3d8e9f0a1b2c3d4e5f0000", false), ("0f9d2c4e-1b2a-4c3d-8e9f-0a1b2c3d4e5g", false)])
    func uuidShape(name: String, valid: Bool) {
        #expect(RandomName.isUUID(name) == valid)
    }
}
