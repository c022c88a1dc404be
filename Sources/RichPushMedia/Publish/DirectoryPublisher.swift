internal import CSystem
import RichPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// The built-in publisher: each attachment copied, content-addressed, to `directory/<sha256>.<ext>` (mode 0644,
/// written as a file without a name, or under a hidden temporary one, and linked into place, so a file there is
/// always whole; one already there is kept when it is the same bytes: a regular file, not a link, of the
/// attachment's size and SHA-256; any other thing at the name is replaced), and published as
/// `baseURL/<sha256>.<ext>`. Point a web server or CDN origin at the directory.
public struct DirectoryPublisher: MediaPublisher {
    /// Where files are published.
    public let directory: String
    /// The URL the directory is served under, without a trailing slash.
    public let baseURL: String
    /// Files found to hold their name's bytes, by name, with what `lstat` said of them then: a campaign publishes
    /// one image many times, and each check of a file already there reads it whole to hash it. A name is trusted
    /// again only while its inode, size and modification time are the same.
    private let verified = LockedValue<[String: FileIdentity]>([:])
    /// The most names remembered; past it the memory starts again. 65,536: a few megabytes.
    static let rememberedNames = 65_536

    /// What `lstat` says of a regular file, to know it unchanged.
    private struct FileIdentity: Equatable {
        var device: UInt64
        var inode: UInt64
        var size: Int
        var modified: Int
        var modifiedNanoseconds: Int
    }

    /// A publisher into `directory` (made when missing, mode 0755), served as `baseURL`.
    public init(directory: String, baseURL: String) {
        self.directory = directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
    }

    public func publish(_ media: FetchedMedia) throws(PublishFailure) -> String {
        guard media.sha256.count == 64,
            media.sha256.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else { throw PublishFailure("the attachment has no SHA-256 to name it by") }
        let name = media.sha256 + "." + media.type.fileExtension
        let target = directory + "/" + name
        let url = baseURL + "/" + name
        if holds(media, at: target) { return url }
        guard FileSystem.makeDirectories(directory, mode: 0o755) else {
            throw PublishFailure("cannot make \(directory): \(String(cString: strerror(errno)))")
        }
        try check()
        let staged = try Staged(in: directory, for: name)
        defer { staged.discard() }
        try Self.copy(media.path, to: staged)
        // link, not rename: a file already in place (another process published the same bytes) stays as it was.
        let linked = staged.link(as: target)
        if linked == 0 { return url }
        guard linked == EEXIST else {
            throw PublishFailure("cannot link \(target): \(String(cString: strerror(linked)))")
        }
        if holds(media, at: target) { return url }
        // Something else has the name (a file of other bytes, a link, a directory's entry): the copy replaces it,
        // whole, never writing through a link.
        let replaced = staged.replace(target)
        guard replaced == 0 else {
            throw PublishFailure("cannot replace \(target): \(String(cString: strerror(replaced)))")
        }
        verified.withLock { $0[target] = nil }
        return url
    }

    /// Refuses a directory that others may write to (mode `o+w`, sticky or not), or that another user than this
    /// process's (or root) owns: anyone on the machine, or its owner, could then put their own file at a published
    /// name, or one not yet published, and the web server would serve it as the image. The directory may be a link
    /// (to a web root, say): what it leads to is judged. A missing directory passes (it is made, mode 0755, at the
    /// first publication). Checked before each file is written, and by the command line at its start.
    /// - Throws: `PublishFailure` naming the directory and why.
    public func check() throws(PublishFailure) {
        var info = stat()
        guard stat(directory, &info) == 0 else {
            guard errno == ENOENT else {
                throw PublishFailure("cannot read \(directory): \(String(cString: strerror(errno)))")
            }
            return
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw PublishFailure("\(directory) is not a directory") }
        guard info.st_mode & S_IWOTH == 0 else {
            let mode = String(info.st_mode & 0o7777, radix: 8)
            throw PublishFailure(
                "\(directory) is writable by others (mode \(mode)): anyone on this machine could put a file of theirs "
                    + "at a published name")
        }
        // Its owner may always write in it (and make it writable): another user's directory, even one made in a
        // sticky /tmp, is theirs to fill.
        guard info.st_uid == geteuid() || info.st_uid == 0 else {
            throw PublishFailure(
                "\(directory) is owned by uid \(info.st_uid), not by this process's uid \(geteuid()) or root: its "
                    + "owner could put a file of theirs at a published name")
        }
        if let writer = Self.writerByACL(directory, owner: info.st_uid) {
            throw PublishFailure(
                "\(directory) has a POSIX ACL that lets \(writer) write in it: they could put a file of theirs at a "
                    + "published name")
        }
    }

    /// Who other than the directory's owner and this process's user the POSIX ACL of `path` lets write in it (its
    /// `system.posix_acl_access` entries for named users, each under the ACL's mask), as "uid N", or nil when none
    /// does or it has no ACL. With an ACL, the group bits of the mode are the mask over every named entry, so a
    /// `drwxrwxr-x+` directory passed the mode's check while its ACL let another user replace a published file (a
    /// probe: uid 65534 given `rwx`). Named groups are trusted as the owning group is (the group bits may write).
    static func writerByACL(_ path: String, owner: uid_t) -> String? {
        let entries = 1024
        var buffer = [UInt8](repeating: 0, count: 4 + 8 * entries)
        let count = csystem_get_attribute(path, "system.posix_acl_access", &buffer, UInt(buffer.count))
        if count < 0 { return errno == ERANGE ? "the users of its ACL of more than \(entries) entries" : nil }
        func number(_ at: Int, _ size: Int) -> UInt32 {
            (0..<size).reversed().reduce(0) { $0 << 8 | UInt32(buffer[at + $1]) }
        }
        let listed = stride(from: 4, to: Int(count) - 7, by: 8).map {
            (tag: number($0, 2), permissions: number($0 + 2, 2), id: number($0 + 4, 4))
        }
        // ACL_MASK (0x10); without one, the ACL is the mode's bits alone and names nobody.
        guard let mask = listed.first(where: { $0.tag == 0x10 })?.permissions else { return nil }
        // ACL_USER (0x02), with write (2).
        let writer = listed.first { entry in
            entry.tag == 0x02 && entry.permissions & mask & 2 != 0 && entry.id != owner && entry.id != geteuid()
        }
        return writer.map { "uid \($0.id)" }
    }

    /// Whether `target` is `media` published: a regular file (never followed if a link) of its size and SHA-256,
    /// as this publisher leaves one: this process's user's, mode 0644, one link. Another user's file, one others may
    /// write to, or one hard-linked elsewhere could be rewritten in place after the check (which is then trusted
    /// while its inode, size and modification time stay): replaced instead.
    private func holds(_ media: FetchedMedia, at target: String) -> Bool {
        var info = stat()
        guard lstat(target, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int(info.st_size) == media.bytes,
            info.st_uid == geteuid(), info.st_mode & 0o7777 == 0o644, info.st_nlink == 1
        else {
            return false
        }
        let identity = FileIdentity(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int(info.st_size),
            modified: Int(info.st_mtim.tv_sec), modifiedNanoseconds: Int(info.st_mtim.tv_nsec))
        if verified.withLock({ $0[target] == identity }) { return true }
        var buffer = FileSystem.readBuffer(count: FileDigest.chunkBytes)
        guard case .success(let digest) = FileDigest.of(target, buffer: &buffer), digest.sha256 == media.sha256 else {
            return false
        }
        verified.withLock { known in
            if known.count >= Self.rememberedNames { known.removeAll() }
            known[target] = identity
        }
        return true
    }

    /// Copies `source` into `staged` (mode 0644), flushed to disk before it is linked into place.
    static func copy(_ source: String, to staged: Staged) throws(PublishFailure) {
        var failure: PublishFailure?
        let readFailed = FileSystem.readChunks(source) { chunk in
            guard let failed = FileSystem.writeAll(staged.descriptor, chunk) else { return true }
            failure = PublishFailure("cannot write \(staged): \(String(cString: strerror(failed)))")
            return false
        }
        if let readFailed, failure == nil {
            failure = PublishFailure("cannot read \(source): \(String(cString: strerror(readFailed)))")
        }
        // Modes are masked by the umask at creation: world-readable is what publishing means.
        if failure == nil, fchmod(staged.descriptor, 0o644) != 0 || fsync(staged.descriptor) != 0 {
            failure = PublishFailure("cannot finish \(staged): \(String(cString: strerror(errno)))")
        }
        if let failure { throw failure }
    }

    /// A copy on its way into the directory: a file without a name where the file system makes one (O_TMPFILE:
    /// a process that dies mid-copy, even by SIGKILL, leaves nothing behind), else one under a hidden temporary
    /// name (`.<sha256>.<ext>.<uuid>.tmp`), removed when the copy fails or is linked into place.
    struct Staged: CustomStringConvertible {
        let descriptor: Int32
        /// The hidden name: the file's own when it has one from the start, else the name it takes for a moment
        /// to replace another file (an unnamed file can be linked, not renamed).
        let hidden: String
        /// Whether the file has `hidden` as its name from the start.
        let named: Bool

        /// A new file in `directory` for the published `name`, mode 0644; a named one from the start when not
        /// `unnamed` (the fallback, which tests take on any file system).
        /// - Throws: `PublishFailure` when neither kind can be made.
        init(in directory: String, for name: String, unnamed: Bool = true) throws(PublishFailure) {
            hidden = directory + "/." + name + "." + RandomName.uuid() + ".tmp"
            let opened = unnamed ? csystem_open_unnamed(directory, 0o644) : -1
            if opened >= 0 {
                descriptor = opened
                named = false
                return
            }
            guard !unnamed || errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL else {
                throw PublishFailure("cannot create a file in \(directory): \(String(cString: strerror(errno)))")
            }
            descriptor = open(hidden, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else {
                throw PublishFailure("cannot create \(hidden): \(String(cString: strerror(errno)))")
            }
            named = true
        }

        var description: String { named ? hidden : "a new file for \(hidden)" }

        /// Links the file at `target`, which must not exist: 0, or an errno (EEXIST when it does).
        func link(as target: String) -> Int32 {
            if named { return Glibc.link(hidden, target) == 0 ? 0 : errno }
            return csystem_link_unnamed(descriptor, target)
        }

        /// Puts the file at `target` in place of what is there, whole (a rename: never written through a link):
        /// 0, or an errno.
        func replace(_ target: String) -> Int32 {
            if !named {
                let linked = csystem_link_unnamed(descriptor, hidden)
                guard linked == 0 else { return linked }
            }
            guard rename(hidden, target) == 0 else {
                let failed = errno
                if !named { unlink(hidden) }
                return failed
            }
            return 0
        }

        /// Closes the file, and removes its hidden name if it still has one.
        func discard() {
            close(descriptor)
            if named { unlink(hidden) }
        }
    }
}
