#if canImport(Glibc)
    import Glibc
#endif

/// Where attachments are written: each in its own new directory `<root>/<uuid>/` (mode 0700), holding
/// `<uuid>.<ext>`, written under a hidden partial name and renamed into place only when complete.
///
/// No part of a path comes from a URL or a server: every name is a UUID we make.
public struct AttachmentStore: Sendable, Hashable {
    /// The attachments root.
    public let root: String

    /// A store under `root`. The root is created (mode 0700) when the first attachment is written.
    public init(root: String) {
        self.root = root
    }

    /// The default root: `$TMPDIR/richpush`, or `/tmp/richpush` when TMPDIR is unset.
    public static var defaultRoot: String {
        let base = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        return (base.hasSuffix("/") ? String(base.dropLast()) : base) + "/richpush"
    }

    /// Creates a new attachment directory and opens its partial file.
    /// - Throws: `StoreError` with the system's reason.
    /// Makes a new attachment directory holding a hard link to `source` (a complete file on the same file
    /// system) as `<uuid>.<ext>`; returns the directory and the path. Costs a mkdir and a link, no copy.
    func link(_ source: String, fileExtension: String) throws(StoreError) -> (directory: String, path: String) {
        let directory = try makeDirectory()
        let path = directory + "/" + RandomName.uuid() + "." + fileExtension
        guard Glibc.link(source, path) == 0 else {
            let error = StoreError("link \(source)", errno)
            rmdir(directory)
            throw error
        }
        return (directory, path)
    }

    private func makeDirectory() throws(StoreError) -> String {
        let directory = root + "/" + RandomName.uuid()
        if mkdir(directory, 0o700) != 0 {
            guard errno == ENOENT else { throw StoreError("mkdir \(directory)", errno) }
            try ensureRoot()
            guard mkdir(directory, 0o700) == 0 else { throw StoreError("mkdir \(directory)", errno) }
        }
        return directory
    }

    /// Makes (once) and returns the hidden directory `<root>/.cache-<id>` where a media cache keeps its links.
    func makeCacheDirectory(_ id: String) throws(StoreError) -> String {
        let directory = root + "/.cache-" + id
        if mkdir(directory, 0o700) != 0 {
            let code = errno
            if code == EEXIST { return directory }
            guard code == ENOENT else { throw StoreError("mkdir \(directory)", code) }
            try ensureRoot()
            guard mkdir(directory, 0o700) == 0 || errno == EEXIST else { throw StoreError("mkdir \(directory)", errno) }
        }
        return directory
    }

    /// The root is not checked on every call (a mkdir and an lstat per attachment cost as much as the
    /// attachment's own directory): only when making the directory fails because the root is missing.
    func begin() throws(StoreError) -> PartialAttachment {
        let directory = try makeDirectory()
        let name = RandomName.uuid()
        let partial = directory + "/." + name + ".partial"
        let descriptor = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let code = errno
            rmdir(directory)
            throw StoreError("open \(partial)", code)
        }
        return PartialAttachment(directory: directory, name: name, partialPath: partial, descriptor: descriptor)
    }

    private func ensureRoot() throws(StoreError) {
        if mkdir(root, 0o700) == 0 { return }
        var code = errno
        if code == ENOENT {
            // Missing parents are made too (0700), as `mkdir -p` would.
            if FileSystem.makeDirectories(root, mode: 0o700) { return }
            code = errno
        }
        guard code == EEXIST else { throw StoreError("mkdir \(root)", code) }
        var info = stat()
        guard lstat(root, &info) == 0 else { throw StoreError("lstat \(root)", errno) }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw StoreError(detail: "the attachments root \(root) is not a directory (a link or a file)")
        }
    }

    /// Removes attachment directories under the root whose last change is older than `age`; returns how many.
    /// Only directories named as this store names them (a UUID, or `.cache-<UUID>` for a media cache's links,
    /// which a running cache re-creates and refills) are touched. Everything is removed by descriptors: a link
    /// is removed, never followed, and nothing on another device than the root (a mount) is entered.
    public func collectGarbage(olderThan age: Duration) throws(StoreError) -> Int {
        let directory: Directory
        do {
            directory = try Directory(opening: root)
        } catch {
            if error.code == ENOENT { return 0 }
            throw error
        }
        // Saturating, so that no age traps: one beyond the epoch takes nothing, a negative one everything.
        let (difference, overflow) = Int64(time(nil)).subtractingReportingOverflow(age.components.seconds)
        let cutoff = overflow ? (age < .zero ? Int64.max : Int64.min) : difference
        var removed = 0
        for name in try directory.names() {
            let id = name.hasPrefix(".cache-") ? String(name.dropFirst(".cache-".count)) : name
            guard RandomName.isUUID(id), let info = directory.status(of: name), (info.st_mode & S_IFMT) == S_IFDIR,
                Int64(info.st_mtim.tv_sec) < cutoff
            else { continue }
            if directory.removeTree(name) { removed += 1 }
        }
        return removed
    }
}

/// An attachment being written: its directory, its open partial file. Owned by one transfer.
final class PartialAttachment {
    let directory: String
    let name: String
    let partialPath: String
    private var descriptor: Int32

    init(directory: String, name: String, partialPath: String, descriptor: Int32) {
        self.directory = directory
        self.name = name
        self.partialPath = partialPath
        self.descriptor = descriptor
    }

    deinit { discard() }

    /// Appends bytes; throws on a short or failed write (ENOSPC, EIO).
    func write(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw StoreError("write \(partialPath)", errno)
            }
            offset += written
        }
    }

    /// Closes the file and renames it to `<uuid>.<ext>`; returns the final path.
    func commit(fileExtension: String) throws(StoreError) -> String {
        let finalPath = directory + "/" + name + "." + fileExtension
        let fd = descriptor
        descriptor = -1
        // close reports deferred write errors (NFS, quota); a failed close or rename leaves nothing behind.
        if close(fd) != 0 || rename(partialPath, finalPath) != 0 {
            let error = StoreError("commit \(partialPath)", errno)
            unlink(partialPath)
            rmdir(directory)
            throw error
        }
        return finalPath
    }

    /// Removes the partial file and the directory, whatever state they are in. Idempotent.
    func discard() {
        if descriptor >= 0 {
            close(descriptor)
            descriptor = -1
            unlink(partialPath)
            rmdir(directory)
        }
    }
}

@available(*, unavailable)
extension PartialAttachment: Sendable {}

/// Writing an attachment failed; `detail` names the operation, the path and the system's reason.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// What failed and why.
    public let detail: String
    /// The system's errno, or 0 when the reason is ours.
    let code: Int32

    init(detail: String) {
        self.detail = detail
        code = 0
    }

    init(_ operation: String, _ code: Int32) {
        self.detail = "\(operation): \(String(cString: strerror(code)))"
        self.code = code
    }

    public var description: String { detail }
}
