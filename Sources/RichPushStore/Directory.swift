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
    package init(opening name: String, in parent: Directory? = nil) throws(StoreError) {
        let path = parent.map { $0.path + "/" + name } ?? name
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
        var mountID: UInt64 = 0
        mount = csystem_mount_id(descriptor, &mountID) == 0 ? mountID : nil
        owner = info.st_uid
        mode = info.st_mode
    }

    deinit { close(descriptor) }

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

    /// The names in this directory, without `.` and `..` (`fdopendir` on a duplicate of the descriptor).
    /// - Throws: `StoreError` with errno.
    package func names() throws(StoreError) -> [String] {
        let duplicate = dup(descriptor)
        guard duplicate >= 0, let stream = fdopendir(duplicate) else {
            let error = StoreError("list \(path)", errno)
            if duplicate >= 0 { close(duplicate) }
            throw error
        }
        defer { closedir(stream) }
        // The duplicate shares the descriptor's position: start from the first entry whatever came before.
        rewinddir(stream)
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// Removes `name` and, for a directory, everything under it, by descriptors only: a symbolic link is removed,
    /// never followed; a directory on another device or another mount than this one's (a mount, a bind mount of
    /// the same file system included) is not entered, and so is not removed; depth is bounded (our trees are two
    /// levels deep). Returns whether it is all gone.
    @discardableResult
    package func removeTree(_ name: String, depth: Int = 8) -> Bool {
        removeTree(name, within: (device, mount), depth: depth)
    }

    private func removeTree(_ name: String, within boundary: (device: UInt64, mount: UInt64?), depth: Int) -> Bool {
        let child: Directory
        do {
            child = try Directory(opening: name, in: self)
        } catch {
            switch error.code {
            case ENOENT: return true
            // Not a directory, or a link to anything: the name itself goes.
            case ENOTDIR, ELOOP: return unlinkat(descriptor, name, 0) == 0 || errno == ENOENT
            default: return false
            }
        }
        guard child.device == boundary.device, child.mount == boundary.mount, depth > 0, let names = try? child.names()
        else { return false }
        var removed = true
        for entry in names where !child.removeTree(entry, within: boundary, depth: depth - 1) { removed = false }
        // If `name` was swapped for something else meanwhile, this removes at most an empty directory of ours.
        return unlinkat(descriptor, name, AT_REMOVEDIR) == 0 && removed
    }
}
