internal import CSystem
import RichPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// The attachments root, opened once and checked, with everything under it made relative to its descriptor:
/// attachment directories (`mkdirat`), partial files (`openat`), their final names (`renameat`) and the media
/// cache's links (`linkat`).
///
/// A root that is a symbolic link (`O_NOFOLLOW`), is not a directory, belongs to another user than the effective
/// one, or is writable by group or others is refused: through any of those someone else could put a link where
/// we are about to write. Past that check only this user can change names in the root, so the names we make in it
/// (`<uuid>/<uuid>.<ext>`) are used as paths relative to the descriptor without opening each directory again; the
/// long-lived media cache directory is opened once (`O_NOFOLLOW`) and used through its own descriptor.
package final class AttachmentRoot: Sendable {
    /// The open root; its path is the one given, and prefixes every path handed back.
    package let directory: Directory

    /// Opens the root at `path`, making it first when missing (mode 0700, with missing parents, as `mkdir -p`).
    /// - Throws: `StoreError` naming the root and why it is refused, or the system's reason.
    package init(opening path: String) throws(StoreError) {
        if let directory = try Self.open(path) {
            self.directory = directory
            return
        }
        let made = FileSystem.makeDirectories(path, mode: 0o700)
        let code = errno
        // Open what is there now, whoever made it: the checks decide.
        guard let directory = try Self.open(path) else { throw StoreError("mkdir \(path)", made ? ENOENT : code) }
        self.directory = directory
        // A root we make is marked the top of unrelated directory trees (ext4's `T` attribute, `chattr +T`), so that
        // ext4 spreads the attachment directories over its block groups (the Orlov allocator) instead of packing them
        // into the root's group. Best effort: other file systems refuse it, and nothing depends on it. A root that
        // already exists is left as it is (`chattr +T` it yourself).
        //
        // Measured (bench (a) and (b) on this machine's ext4, which has no journal, right after the previous run's
        // files were deleted): without a journal, ext4 skips every inode freed in the last minute when it looks for a
        // free one (`recently_deleted`), one inode-table lookup each, from the start of the group, under the parent
        // directory's lock. In the root's group, after a run of 10,000 deletions, that was 40% of `stream`'s CPU and
        // another 49% was a second thread spinning on that lock; 10,000 campaign attachments took 2.5-4.1 s and 2,000
        // unique ones 1.6-2.0 s. Spread over the groups they took 1.5 s and 0.6-0.7 s. On a journaled ext4 the
        // attribute made no measurable difference either way.
        _ = csystem_mark_top_directory(directory.descriptor)
    }

    /// Whether the root is on a file system kept in memory (tmpfs, ramfs), where making a directory and a file
    /// costs no disk allocation.
    package var isInMemory: Bool { csystem_is_memory_file_system(directory.descriptor) != 0 }

    /// Opens the root at `path` if it exists; nil when it does not (`gc` has nothing to do, and makes nothing).
    /// - Throws: `StoreError` naming the root and why it is refused, or the system's reason.
    package init?(existing path: String) throws(StoreError) {
        guard let directory = try Self.open(path) else { return nil }
        self.directory = directory
    }

    /// Refuses to hand back a path under a root that is no longer at its path: renamed, removed or swapped for
    /// another directory or a link while the process runs, it goes on through its descriptor, and a path under the
    /// old name would name another file, or none. Checked as each attachment is completed (an `lstat`).
    /// - Throws: `StoreError` naming the root and what to do.
    package func checkInPlace() throws(StoreError) {
        guard directory.isAtItsPath else {
            throw StoreError(
                detail: "the attachments root \(directory.path) was moved, removed or replaced while in use: a path "
                    + "under it would name another file; restart with the root in place")
        }
    }

    /// Opens and checks the root; nil when it does not exist. Its trailing slashes and `.` components are dropped
    /// first: `O_NOFOLLOW` looks at a path's last component, and `link/` or `link/.` resolves `link` on the way to
    /// an empty one or `.`, so a root that is a link, written so, was followed (gc removed through it, enrich wrote
    /// through it); one whose last component is `..` is refused (the directory it names has a name of its own).
    private static func open(_ given: String) throws(StoreError) -> Directory? {
        var path = given
        while true {
            if path.utf8.count > 1, path.hasSuffix("/") {
                path.removeLast()
            } else if path.utf8.count > 2, path.hasSuffix("/.") {
                path.removeLast(2)
            } else {
                break
            }
        }
        if path == ".." || path.hasSuffix("/..") {
            throw refusal(given, "its last component is '..': give the directory's own path")
        }
        let directory: Directory
        do {
            directory = try Directory(opening: path)
        } catch {
            if error.code == ENOENT { return nil }
            var info = stat()
            if lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFLNK {
                throw refusal(path, "it is a symbolic link, and a link is never followed")
            }
            if error.code == ENOTDIR { throw refusal(path, "it is not a directory") }
            throw StoreError("the attachments root: open \(path)", error.code)
        }
        guard directory.owner == geteuid() else {
            throw refusal(path, "it is owned by uid \(directory.owner), not by this process's uid \(geteuid())")
        }
        guard directory.mode & 0o022 == 0 else {
            throw refusal(path, "it is writable by group or others (mode \(String(directory.mode & 0o7777, radix: 8)))")
        }
        return directory
    }

    private static func refusal(_ path: String, _ reason: String) -> StoreError {
        StoreError(detail: "the attachments root \(path) is refused: \(reason)")
    }

    /// Makes a new attachment directory (mode 0700) and opens its partial file (`O_CREAT | O_EXCL | O_NOFOLLOW`,
    /// mode 0600).
    /// - Throws: `StoreError` with the system's reason; nothing is left behind.
    package func begin() throws(StoreError) -> PartialAttachment {
        try begin(PartialAttachment.Names(id: try makeAttachmentDirectory(), file: RandomName.uuid(), spare: false))
    }

    /// Makes a spare: a hidden directory `.spare-<uuid>` (mode 0700) holding an empty partial file, as `begin()`
    /// makes them but under a name that is no attachment's (listings, `gc` and `remove` see no attachment in it)
    /// until `PartialAttachment.reveal()` renames it to `<uuid>` and opens the file. A spare holds no descriptor:
    /// the file is made (`O_CREAT | O_EXCL`, which allocates its inode) and closed at once. (Holding 32 open
    /// descriptors per fetcher made Foundation's `Process.run()`, which over-reads `/proc/self/fd` entries,
    /// crash in the test suite: swift-corelibs-foundation#5472.)
    /// - Throws: `StoreError` with the system's reason; nothing is left behind.
    func beginSpare() throws(StoreError) -> PartialAttachment {
        let names = PartialAttachment.Names(id: RandomName.uuid(), file: RandomName.uuid(), spare: true)
        try directory.makeDirectory(names.folder, mode: 0o700)
        let spare = try begin(names)
        spare.closeSpare()
        return spare
    }

    /// Opens the partial file in the directory `names.folder`, made by the caller; removes that directory when
    /// the file cannot be made.
    private func begin(_ names: PartialAttachment.Names) throws(StoreError) -> PartialAttachment {
        let descriptor = openat(
            directory.descriptor, names.partial, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let error = StoreError("open \(directory.path)/\(names.partial)", errno)
            unlinkat(directory.descriptor, names.folder, AT_REMOVEDIR)
            throw error
        }
        return PartialAttachment(root: self, names: names, descriptor: descriptor)
    }

    /// Makes a new attachment directory holding a hard link to `name` in `source` (a complete file on the same
    /// file system) as `<uuid>.<ext>`; returns the directory and the path. Costs a mkdir and a link, no copy.
    /// - Throws: `StoreError` with the system's reason; nothing is left behind.
    package func link(_ name: String, in source: Directory, fileExtension: String) throws(StoreError) -> (
        directory: String, path: String
    ) {
        try link(name, in: source, into: try makeAttachmentDirectory(), fileExtension: fileExtension)
    }

    /// Links `name` in `source` as `<uuid>.<ext>` into `folder`, an empty attachment directory made for this link
    /// (`makeAttachmentDirectory()`, maybe ahead: `SpareAttachments`); removes `folder` when the link fails.
    /// - Throws: `StoreError` with the system's reason; nothing is left behind.
    func link(_ name: String, in source: Directory, into folder: String, fileExtension: String) throws(StoreError)
        -> (directory: String, path: String)
    {
        let file = folder + "/" + RandomName.uuid() + "." + fileExtension
        do {
            try directory.link(name, from: source, as: file)
            try checkInPlace()
        } catch {
            unlinkat(directory.descriptor, file, 0)
            unlinkat(directory.descriptor, folder, AT_REMOVEDIR)
            throw error
        }
        return (directory.path + "/" + folder, directory.path + "/" + file)
    }

    /// Makes (when missing) and opens the hidden directory `.cache-<id>` where a media cache keeps its links.
    /// Opened `O_NOFOLLOW`: a link in its place is refused, and one put there later changes nothing, as the
    /// cache goes on through this descriptor.
    /// - Throws: `StoreError` with the system's reason.
    package func makeCacheDirectory(_ id: String) throws(StoreError) -> Directory {
        let name = ".cache-" + id
        do {
            try directory.makeDirectory(name, mode: 0o700)
        } catch {
            guard error.code == EEXIST else { throw error }
        }
        return try Directory(opening: name, in: directory)
    }

    /// Removes a stored attachment's directory, `<root>/<uuid>/`, and what it holds; returns whether it was one
    /// of ours and is gone. A path outside the root, or a directory not named as we name them, is left alone.
    @discardableResult
    package func remove(_ media: FetchedMedia) -> Bool {
        remove(directory: media.directory, path: media.path)
    }

    /// Removes the attachment directory `directory`, holding the file at `path`, as `remove(_:)` does: for a file
    /// stored but not yet described as `FetchedMedia` (not yet hashed).
    @discardableResult
    package func remove(directory attachment: String, path: String) -> Bool {
        let prefix = directory.path + "/"
        guard attachment.hasPrefix(prefix), path.hasPrefix(attachment + "/") else { return false }
        let name = String(attachment.dropFirst(prefix.count))
        guard RandomName.isUUID(name), directory.status(of: name) != nil else { return false }
        return directory.removeTree(name) == nil
    }

    /// The prefix of a spare's hidden directory name (`SpareAttachments`).
    static let sparePrefix = ".spare-"

    /// Removes the empty directory `name` (one made ahead and not used); one that is not empty is left.
    func removeEmptyDirectory(_ name: String) {
        unlinkat(directory.descriptor, name, AT_REMOVEDIR)
    }

    /// Makes a new directory `<uuid>` (mode 0700) in the root; returns its name.
    /// - Throws: `StoreError` with the system's reason, or saying that the root was removed while running.
    func makeAttachmentDirectory() throws(StoreError) -> String {
        let name = RandomName.uuid()
        do {
            try directory.makeDirectory(name, mode: 0o700)
        } catch {
            // The descriptor outlives a root removed while we run: say so rather than "no such file".
            guard error.code == ENOENT else { throw error }
            throw StoreError(detail: "the attachments root \(directory.path) was removed while running")
        }
        return name
    }
}
