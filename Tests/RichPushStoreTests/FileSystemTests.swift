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
        #expect(try Directory(opening: root).removeTree("a") == nil)
        #expect(!FileManager.default.fileExists(atPath: root + "/a"))
        #expect(FileManager.default.fileExists(atPath: outside + "/keep.jpg"))
    }

    /// Mounting needs CAP_SYS_ADMIN: the test runs as root (as this project's machines and CI do), else it is off.
    @Test(
        "removeTree does not enter a bind mount of the same file system: what it shows survives",
        .enabled(if: getuid() == 0, "mount(2) needs root"))
    func removeTreeKeepsBindMounts() throws {
        let root = try temporaryDirectory()
        let outside = try temporaryDirectory()
        let mountPoint = root + "/a/b/mnt"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: outside + "/keep.jpg", contents: Data([1, 2, 3])))
        #expect(FileManager.default.createFile(atPath: root + "/a/x.jpg", contents: Data([1])))
        try #require(mount(outside, mountPoint, nil, UInt(MS_BIND), nil) == 0, "mount --bind: errno \(errno)")
        defer {
            umount2(mountPoint, Int32(MNT_DETACH))
            try? FileManager.default.removeItem(atPath: root)
            try? FileManager.default.removeItem(atPath: outside)
        }
        // The same file system: the device alone does not tell the mount.
        let device = { (path: String) throws -> UInt64 in
            UInt64(try #require(FileManager.default.attributesOfItem(atPath: path)[.systemNumber] as? Int))
        }
        #expect(try device(mountPoint) == device(root))
        let leftover = try Directory(opening: root).removeTree("a")
        let expected = GarbageCollection.Leftover(
            path: root + "/a/b/mnt", reason: "another file system is mounted there: not entered")
        #expect(leftover == expected, "a tree holding a mount is not all gone, and says where")
        #expect(FileManager.default.fileExists(atPath: outside + "/keep.jpg"))
        #expect(!FileManager.default.fileExists(atPath: root + "/a/x.jpg"), "the rest of the tree goes")
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
