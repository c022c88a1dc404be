internal import CSystem

#if canImport(Glibc)
    import Glibc
#endif

/// An open directory: owns its descriptor and closes it in deinit. Names in it are made, linked, renamed and
/// removed relative to the descriptor (the `*at` calls), so a path swapped for a symbolic link after the
/// directory was opened is never followed somewhere else.
///
/// `Sendable`, unlike the curl and libmagic handles: it holds no state in user space, only a descriptor that
/// never changes, and the kernel serialises the `*at` calls made on it; the fetch loop's thread and the media
/// cache's tasks share the attachments root this way. (A `DIR` stream, which has state, lives only within
/// `names()`.)
package final class Directory: Sendable {
    /// The descriptor (`O_DIRECTORY | O_CLOEXEC`).
    package let descriptor: Int32
    /// The path it was opened at: for messages, and for the paths handed back to callers.
    package let path: String
    /// The device it is on, as `fstat` found it when it was opened.
    let device: UInt64
    /// Its inode, as `fstat` found it.
    let inode: UInt64
    /// The mount it is on (statx's mount id), when the kernel says: a bind mount of the same file system has the
    /// same device.
    let mount: UInt64?
    /// Its owner's uid, as `fstat` found it.
    let owner: UInt32
    /// Its mode (type and permission bits), as `fstat` found it.
    let mode: UInt32

    /// Opens `name` in `parent` (`name` is a path from the current directory when there is no parent) as a
    /// directory, never following a symbolic link in its last component (`O_DIRECTORY | O_NOFOLLOW`).
    /// - Throws: `StoreError` with errno: `ENOTDIR` for a link or a non-directory, `ENOENT` when missing.
    package convenience init(opening name: String, in parent: Directory? = nil) throws(StoreError) {
        try self.init(opening: Array(name.utf8CString), shown: parent.map { $0.path + "/" + name } ?? name, in: parent)
    }

    /// Opens `name`, the bytes of a name as the system gives them (NUL-terminated, maybe not UTF-8), shown as `path`.
    private init(opening name: [CChar], shown path: String, in parent: Directory?) throws(StoreError) {
        let descriptor = openat(parent?.descriptor ?? AT_FDCWD, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { throw StoreError("open \(path)", errno) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let error = StoreError("fstat \(path)", errno)
            close(descriptor)
            throw error
        }
        self.descriptor = descriptor
        self.path = path
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        var mountID: UInt64 = 0
        mount = csystem_mount_id(descriptor, &mountID) == 0 ? mountID : nil
        owner = info.st_uid
        mode = info.st_mode
    }

    deinit { close(descriptor) }

    /// Whether `path` still names this directory (`lstat`: the same device and inode), not another file, a link or
    /// nothing after a rename or a swap.
    package var isAtItsPath: Bool {
        var info = stat()
        return lstat(path, &info) == 0 && UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    /// Whether this directory was removed (`fstat`: no link left to it), while the descriptor keeps it open.
    package var isRemoved: Bool {
        var info = stat()
        return fstat(descriptor, &info) == 0 && info.st_nlink == 0
    }

    /// Makes the directory `name` in this one (`mkdirat`).
    /// - Throws: `StoreError` with errno (`EEXIST` included).
    package func makeDirectory(_ name: String, mode: Glibc.mode_t) throws(StoreError) {
        guard mkdirat(descriptor, name, mode) == 0 else { throw StoreError("mkdir \(path)/\(name)", errno) }
    }

    /// Makes `target` in this directory a hard link to `name` in `source` (`linkat`; a link at `name` is linked
    /// itself, never followed).
    /// - Throws: `StoreError` with errno.
    package func link(_ name: String, from source: Directory, as target: String) throws(StoreError) {
        guard linkat(source.descriptor, name, descriptor, target, 0) == 0 else {
            throw StoreError("link \(source.path)/\(name)", errno)
        }
    }

    /// What `name` is, without following a link (`fstatat` with `AT_SYMLINK_NOFOLLOW`); nil when it is gone.
    package func status(of name: String) -> stat? {
        var info = stat()
        return fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 ? info : nil
    }

    /// Sets the last change of the directory `name` in this one to the clock's now, its last access left as it is,
    /// through a descriptor of it (`futimens`): a link is never followed, and a directory on another file system or
    /// mount (one mounted there) is not touched, as `removeTree` does not enter it. nil when done or when `name` is
    /// gone; else why not.
    package func markChangedNow(_ name: String) -> GarbageCollection.Leftover? {
        let shown = path + "/" + name
        let child: Directory
        do {
            child = try Directory(opening: Array(name.utf8CString), shown: shown, in: self)
        } catch {
            guard error.code != ENOENT else { return nil }
            return .init(path: shown, reason: Self.notDated("not opened: " + String(cString: strerror(error.code))))
        }
        guard child.device == device, child.mount == mount else {
            return .init(path: shown, reason: Self.notDated("another file system is mounted there"))
        }
        // <sys/stat.h>'s UTIME_OMIT and UTIME_NOW, macros Swift does not import.
        let (omit, now) = ((1 << 30) - 2, (1 << 30) - 1)
        var times = [timespec(tv_sec: 0, tv_nsec: omit), timespec(tv_sec: 0, tv_nsec: now)]
        guard futimens(child.descriptor, &times) == 0 else {
            return .init(path: shown, reason: Self.notDated(String(cString: strerror(errno))))
        }
        return nil
    }

    /// Why a directory whose last change is ahead of the clock was left: `why` it could not be dated now.
    private static func notDated(_ why: String) -> String {
        "its last change is ahead of the clock, and it could not be dated now (\(why))"
    }

    /// The names in this directory, without `.` and `..` (`fdopendir` on a duplicate of the descriptor).
    /// - Throws: `StoreError` with errno.
    package func names() throws(StoreError) -> [String] {
        try rawNames().map(Self.shown)
    }

    /// A name as the system gives it (NUL-terminated), for a message or a path: bytes that are not UTF-8 are shown
    /// as U+FFFD.
    private static func shown(_ name: [CChar]) -> String {
        String(decoding: name.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The names in this directory as the system gives them, NUL-terminated, without `.` and `..`: a name that is
    /// not UTF-8 is still one that `openat` and `unlinkat` find.
    private func rawNames() throws(StoreError) -> [[CChar]] {
        let duplicate = dup(descriptor)
        guard duplicate >= 0, let stream = fdopendir(duplicate) else {
            let error = StoreError("list \(path)", errno)
            if duplicate >= 0 { close(duplicate) }
            throw error
        }
        defer { closedir(stream) }
        // The duplicate shares the descriptor's position: start from the first entry whatever came before.
        rewinddir(stream)
        var names: [[CChar]] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                raw.prefix { $0 != 0 }.map { CChar(bitPattern: $0) } + [0]
            }
            if name != [46, 0], name != [46, 46, 0] { names.append(name) }
        }
        return names
    }

    /// Removes `name` and, for a directory, everything under it, by descriptors only: a symbolic link is removed,
    /// never followed; a directory on another device or another mount than this one's (a mount, a bind mount of
    /// the same file system included) is not entered, and so is not removed; depth is bounded (our trees are two
    /// levels deep). Names that are not UTF-8 are removed too. Returns nil when it is all gone, or the first thing
    /// left and why.
    @discardableResult
    package func removeTree(_ name: String) -> GarbageCollection.Leftover? {
        removeTree(Array(name.utf8CString), within: (device, mount), depth: Self.removalDepth)
    }

    /// How many directories deep `removeTree` goes.
    static let removalDepth = 8

    private func removeTree(_ name: [CChar], within boundary: (device: UInt64, mount: UInt64?), depth: Int)
        -> GarbageCollection.Leftover?
    {
        let shown = path + "/" + Self.shown(name)
        func left(_ reason: String) -> GarbageCollection.Leftover { .init(path: shown, reason: reason) }
        func left(errno code: Int32, _ what: String) -> GarbageCollection.Leftover {
            left(what + ": " + String(cString: strerror(code)))
        }
        let child: Directory
        do {
            child = try Directory(opening: name, shown: shown, in: self)
        } catch {
            switch error.code {
            case ENOENT: return nil
            // Not a directory, or a link to anything: the name itself goes.
            case ENOTDIR, ELOOP:
                return unlinkat(descriptor, name, 0) == 0 || errno == ENOENT ? nil : left(errno: errno, "not removed")
            default: return left(errno: error.code, "not opened")
            }
        }
        guard child.device == boundary.device, child.mount == boundary.mount else {
            return left("another file system is mounted there: not entered")
        }
        guard depth > 0 else { return left("more than \(Self.removalDepth) directories deep: not entered") }
        let names: [[CChar]]
        do {
            names = try child.rawNames()
        } catch {
            return left(errno: error.code, "not listed")
        }
        var first: GarbageCollection.Leftover?
        for entry in names {
            if let leftover = child.removeTree(entry, within: boundary, depth: depth - 1), first == nil {
                first = leftover
            }
        }
        // If `name` was swapped for something else meanwhile, this removes at most an empty directory of ours.
        guard unlinkat(descriptor, name, AT_REMOVEDIR) != 0 else { return first }
        return first ?? left(errno: errno, "not removed")
    }
}
