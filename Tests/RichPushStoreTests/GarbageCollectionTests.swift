import Foundation
import RichPushCore
import RichPushTestSupport
import Testing

@testable import RichPushStore

@Suite("gc: by descriptors only, never following a link, never crossing a device", .offPool)
struct GarbageCollectionTests {
    /// An attachments root and a directory outside it, each new.
    struct Scratch {
        let root: String
        let outside: String

        init() throws {
            root = try temporaryDirectory()
            outside = try temporaryDirectory()
        }

        func remove() {
            try? FileManager.default.removeItem(atPath: root)
            try? FileManager.default.removeItem(atPath: outside)
        }
    }

    /// An age of 0 takes every attachment directory: one made this very second (mtimes were compared in whole
    /// seconds, and one of the current second was not older) and one whose time is ahead of the clock (set back).
    /// An age of a second keeps both.
    @Test("--older-than 0 takes a directory made this second and one dated in the future; 1 keeps them")
    func ageZero() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let root = scratch.root
        func make() throws -> (now: String, future: String) {
            let (now, future) = (attachmentName(), attachmentName())
            for name in [now, future] {
                try FileManager.default.createDirectory(atPath: root + "/" + name, withIntermediateDirectories: false)
            }
            var times = [
                timespec(tv_sec: time(nil) + 3600, tv_nsec: 0), timespec(tv_sec: time(nil) + 3600, tv_nsec: 0),
            ]
            #expect(utimensat(AT_FDCWD, root + "/" + future, &times, 0) == 0)
            return (now, future)
        }
        let kept = try make()
        #expect(try AttachmentStore(root: root).collectGarbage(olderThan: .seconds(1)) == Self.removed(0, redated: 1))
        #expect(entries(root) == [kept.now, kept.future].sorted())
        #expect(try AttachmentStore(root: root).collectGarbage(olderThan: .zero).removed == 2)
        #expect(entries(root).isEmpty)
    }

    /// A clock set back (a machine booted with its clock years ahead, then corrected) left directories dated in the
    /// future: kept until the clock reached their date, they filled the disk meanwhile.
    @Test(
        """
        a directory dated ahead of the clock is dated now instead and kept, then ages from now; its last access and \
        what is inside it are left as they were
        """)
    func datedAhead() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let root = scratch.root
        let (ahead, hidden, fresh) = (attachmentName(), ".spare-" + attachmentName(), attachmentName())
        let nearlyNow = attachmentName()
        for name in [ahead, hidden, fresh, nearlyNow] {
            try FileManager.default.createDirectory(atPath: root + "/" + name, withIntermediateDirectories: false)
        }
        _ = FileManager.default.createFile(atPath: root + "/" + ahead + "/a.jpg", contents: Data([1]))
        let tenYears = time(nil) + 315_360_000
        var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: tenYears, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, root + "/" + ahead, &times, 0) == 0)
        #expect(utimensat(AT_FDCWD, root + "/" + hidden, &times, 0) == 0)
        // 30 s ahead: within a minute (a process making it while gc lists, a file server's clock), left as it is.
        var soon = [timespec(tv_sec: time(nil) + 30, tv_nsec: 0), timespec(tv_sec: time(nil) + 30, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, root + "/" + nearlyNow, &soon, 0) == 0)
        var inside = [timespec(tv_sec: tenYears, tv_nsec: 0), timespec(tv_sec: tenYears, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, root + "/" + ahead + "/a.jpg", &inside, 0) == 0)
        func status(_ path: String) -> stat {
            var info = stat()
            #expect(stat(root + "/" + path, &info) == 0)
            return info
        }
        let before = time(nil)
        #expect(
            try AttachmentStore(root: root).collectGarbage(olderThan: .seconds(3600)) == Self.removed(0, redated: 2))
        let after = time(nil)
        #expect(entries(root) == [ahead, hidden, fresh, nearlyNow].sorted())
        #expect(status(nearlyNow).st_mtim.tv_sec == soon[1].tv_sec, "30 s ahead: left as it is")
        for name in [ahead, hidden] {
            #expect((before...after).contains(status(name).st_mtim.tv_sec), "\(name) dated now")
            #expect(status(name).st_atim.tv_sec == 1_000_000, "\(name)'s last access left")
        }
        #expect(status(ahead + "/a.jpg").st_mtim.tv_sec == tenYears, "inside: left as it was")
        // Dated now, they are no longer ahead: the next gc leaves them as they are, until they are old.
        #expect(try AttachmentStore(root: root).collectGarbage(olderThan: .seconds(3600)) == Self.removed(0))
        try makeOld(root + "/" + ahead)
        #expect(try AttachmentStore(root: root).collectGarbage(olderThan: .seconds(3600)) == Self.removed(1))
        #expect(entries(root) == [hidden, fresh, nearlyNow].sorted())
    }

    @Test("links under the root, in its place or deeper, are removed or passed over, never followed")
    func links() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let (root, outside) = (scratch.root, scratch.outside)
        try FileManager.default.createDirectory(atPath: outside + "/inner", withIntermediateDirectories: false)
        for file in ["keep.jpg", "inner/keep.png"] {
            _ = FileManager.default.createFile(atPath: outside + "/" + file, contents: Data([1, 2, 3]))
        }
        // An attachment name that is a link to a directory outside the root.
        let linked = attachmentName()
        try FileManager.default.createSymbolicLink(atPath: root + "/" + linked, withDestinationPath: outside)
        // An attachment directory holding links to a file and a directory outside, one level down too.
        let holder = root + "/" + attachmentName()
        try FileManager.default.createDirectory(atPath: holder + "/nested", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: holder + "/file", withDestinationPath: outside + "/keep.jpg")
        try FileManager.default.createSymbolicLink(atPath: holder + "/dir", withDestinationPath: outside)
        try FileManager.default.createSymbolicLink(
            atPath: holder + "/nested/dir", withDestinationPath: outside + "/inner")
        try makeOld(holder)
        #expect(try AttachmentStore(root: root).collectGarbage(olderThan: .seconds(3600)).removed == 1)
        #expect(entries(root) == [linked])
        #expect(entries(outside) == ["inner", "keep.jpg"])
        #expect(entries(outside + "/inner") == ["keep.png"])
    }

    @Test("a file system mounted inside an attachment directory is not entered", .enabled(if: canMountTmpfs))
    func otherDevice() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let directory = root + "/" + attachmentName()
        let point = directory + "/mounted"
        try FileManager.default.createDirectory(atPath: point, withIntermediateDirectories: true)
        #expect(mount("tmpfs", point, "tmpfs", 0, "size=64k") == 0)
        defer { umount(point) }
        _ = FileManager.default.createFile(atPath: point + "/keep.jpg", contents: Data([1, 2, 3]))
        try makeOld(directory)
        let collection = try AttachmentStore(root: root).collectGarbage(olderThan: .seconds(3600))
        #expect(entries(point) == ["keep.jpg"])
        #expect(
            collection
                == GarbageCollection(
                    removed: 0,
                    left: [.init(path: point, reason: "another file system is mounted there: not entered")]),
            "the directory holding the mount is named, not counted as removed")
    }

    /// A file system mounted on an attachment directory's name, dated ahead of the clock: its root is not touched.
    @Test(
        "a file system mounted on a directory dated ahead of the clock is not dated now, and is named",
        .enabled(if: canMountTmpfs))
    func otherDeviceDatedAhead() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let point = root + "/" + attachmentName()
        try FileManager.default.createDirectory(atPath: point, withIntermediateDirectories: false)
        #expect(mount("tmpfs", point, "tmpfs", 0, "size=64k") == 0)
        defer { umount(point) }
        let tenYears = time(nil) + 315_360_000
        var times = [timespec(tv_sec: tenYears, tv_nsec: 0), timespec(tv_sec: tenYears, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, point, &times, 0) == 0)
        let collection = try AttachmentStore(root: root).collectGarbage(olderThan: .seconds(3600))
        #expect(
            collection
                == GarbageCollection(
                    removed: 0,
                    left: [
                        .init(
                            path: point,
                            reason:
                                "its last change is ahead of the clock, and it could not be dated now (another file "
                                + "system is mounted there)")
                    ]))
        var info = stat()
        #expect(stat(point, &info) == 0 && info.st_mtim.tv_sec == tenYears, "the mounted file system's root touched")
    }

    static func removed(_ count: Int, redated: Int = 0) -> GarbageCollection {
        GarbageCollection(removed: count, left: [], redated: redated)
    }

    @Test("names that are not UTF-8 are removed with the rest of their directory")
    func namesNotUTF8() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let directory = scratch.root + "/" + attachmentName()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        // Latin-1 "é" (0xE9) alone: not UTF-8; a file and a directory holding one.
        let names: [([UInt8], Bool)] = [([0xE9, 0x2E, 0x6A, 0x70, 0x67], false), ([0x64, 0xFF], true)]
        for (name, isDirectory) in names {
            let path = Array(directory.utf8) + [0x2F] + name
            let made = path.withUnsafeBufferPointer { bytes -> Int32 in
                let cPath = (bytes.map { CChar(bitPattern: $0) } + [0])
                return isDirectory ? mkdir(cPath, 0o700) : open(cPath, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
            }
            #expect(made >= 0, "made \(name): errno \(errno)")
            if !isDirectory, made >= 0 { close(made) }
        }
        try makeOld(directory)
        #expect(try AttachmentStore(root: scratch.root).collectGarbage(olderThan: .seconds(3600)) == Self.removed(1))
        #expect(entries(scratch.root).isEmpty)
    }

    @Test("a tree deeper than removal goes is named with the directory not entered, and the others are removed")
    func tooDeep() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let deep = scratch.root + "/" + attachmentName()
        let nested = deep + String(repeating: "/d", count: Directory.removalDepth + 1)
        try FileManager.default.createDirectory(atPath: nested, withIntermediateDirectories: true)
        let shallow = scratch.root + "/" + attachmentName()
        try FileManager.default.createDirectory(atPath: shallow + "/d", withIntermediateDirectories: true)
        for directory in [deep, shallow] { try makeOld(directory) }
        let collection = try AttachmentStore(root: scratch.root).collectGarbage(olderThan: .seconds(3600))
        #expect(collection.removed == 1)
        #expect(
            collection.left == [
                .init(
                    path: deep + String(repeating: "/d", count: Directory.removalDepth),
                    reason: "more than 8 directories deep: not entered")
            ],
            "\(collection.left)")
        #expect(entries(scratch.root) == [URL(fileURLWithPath: deep).lastPathComponent])
    }

    @Test("ages at the ends of Duration's range take nothing or everything, and never trap")
    func extremeAges() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let old = scratch.root + "/" + attachmentName()
        try FileManager.default.createDirectory(atPath: old, withIntermediateDirectories: false)
        try makeOld(old)
        let store = AttachmentStore(root: scratch.root)
        #expect(try store.collectGarbage(olderThan: .seconds(Int64.max)) == Self.removed(0))
        #expect(try store.collectGarbage(olderThan: .seconds(Int64.min)) == Self.removed(1))
    }

    /// Swaps `<root>/<name>` between a directory and a link to `outside` until told to stop, with renames only
    /// (each atomic): the race an attacker with write access to the root would run against gc. At the lowest
    /// priority, so that it takes only a core nobody else wants and the suite's deadline tests keep theirs.
    private final class Swapper: Sendable {
        private let stop = LockedValue(false)
        private let done = DispatchSemaphore(value: 0)

        init(root: String, name: String) {
            Thread { [stop, done] in
                // On Linux, who 0 is the calling thread alone.
                setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
                let (path, aside, link) = (root + "/" + name, root + "/aside", root + "/link")
                while !stop.withLock({ $0 }) {
                    rename(path, aside)
                    rename(link, path)
                    rename(path, link)
                    rename(aside, path)
                }
                done.signal()
            }.start()
        }

        func finish() {
            stop.withLock { $0 = true }
            done.wait()
        }
    }

    @Test("gc raced by a directory swapped for a link deletes nothing outside the root (at most 20 rounds, 3 s)")
    func race() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let (root, outside) = (scratch.root, scratch.outside)
        // The same names inside and outside: a gc that resolves `<root>/<name>/<file>` through the link, after
        // checking `<root>/<name>` was a directory, unlinks the outside ones.
        let files = (0..<300).map { "f\($0).jpg" }
        for file in files { _ = FileManager.default.createFile(atPath: outside + "/" + file, contents: Data([1])) }
        let name = attachmentName()
        // Off the cooperative pool: rounds of file system work must not hold one of its few threads.
        let deleted = try await offPool {
            let start = ContinuousClock.now
            for _ in 0..<20 where ContinuousClock.now - start < .seconds(3) {
                for entry in entries(root) { try FileManager.default.removeItem(atPath: root + "/" + entry) }
                try FileManager.default.createDirectory(atPath: root + "/" + name, withIntermediateDirectories: false)
                for file in files {
                    _ = FileManager.default.createFile(atPath: root + "/" + name + "/" + file, contents: Data([2]))
                }
                try makeOld(root + "/" + name)
                try FileManager.default.createSymbolicLink(atPath: root + "/link", withDestinationPath: outside)
                let swapper = Swapper(root: root, name: name)
                _ = try? AttachmentStore(root: root).collectGarbage(olderThan: .seconds(3600))
                swapper.finish()
                let deleted = files.count - entries(outside).count
                if deleted > 0 { return deleted }
            }
            return 0
        }
        #expect(deleted == 0, "gc deleted \(deleted) files outside the root")
    }
}
