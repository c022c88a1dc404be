import Foundation
import RichPushTestSupport
import Testing

@testable import RichPushCore
@testable import RichPushStore

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
        #expect(FileManager.default.createFile(atPath: outside + "/keep.jpg", contents: Data([1, 2, 3])))
        try FileManager.default.createDirectory(atPath: root + "/a/b", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: root + "/a/b/x.jpg", contents: Data([1])))
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
        #expect(FileManager.default.createFile(atPath: root + "/file", contents: Data()))
        #expect(!FileSystem.makeDirectories(root + "/file", mode: 0o700))
        #expect(try Directory(opening: root + "/x").names() == ["y"])
    }
}
