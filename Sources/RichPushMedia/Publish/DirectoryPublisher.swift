import RichPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// The built-in publisher: each attachment copied, content-addressed, to `directory/<sha256>.<ext>` (mode 0644,
/// written under a hidden temporary name and linked into place, so a file there is always whole; one already
/// there is kept when it is the same bytes: a regular file, not a link, of the attachment's size and SHA-256; any
/// other thing at the name is replaced), and published as `baseURL/<sha256>.<ext>`. Point a web server or CDN
/// origin at the directory.
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
        let temporary = directory + "/." + name + "." + RandomName.uuid() + ".tmp"
        defer { unlink(temporary) }
        try Self.copy(media.path, to: temporary)
        // link, not rename: a file already in place (another process published the same bytes) stays as it was.
        if link(temporary, target) == 0 { return url }
        guard errno == EEXIST else {
            throw PublishFailure("cannot link \(target): \(String(cString: strerror(errno)))")
        }
        if holds(media, at: target) { return url }
        // Something else has the name (a file of other bytes, a link, a directory's entry): the copy replaces it,
        // whole, never writing through a link.
        guard rename(temporary, target) == 0 else {
            throw PublishFailure("cannot replace \(target): \(String(cString: strerror(errno)))")
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

    /// Copies `source` to a new file `destination` (mode 0644), flushed to disk before it is linked into place.
    static func copy(_ source: String, to destination: String) throws(PublishFailure) {
        let output = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard output >= 0 else {
            throw PublishFailure("cannot create \(destination): \(String(cString: strerror(errno)))")
        }
        var failure: PublishFailure?
        let readFailed = FileSystem.readChunks(source) { chunk in
            guard let failed = FileSystem.writeAll(output, chunk) else { return true }
            failure = PublishFailure("cannot write \(destination): \(String(cString: strerror(failed)))")
            return false
        }
        if let readFailed, failure == nil {
            failure = PublishFailure("cannot read \(source): \(String(cString: strerror(readFailed)))")
        }
        // Modes are masked by the umask at creation: world-readable is what publishing means.
        if failure == nil, fchmod(output, 0o644) != 0 || fsync(output) != 0 {
            failure = PublishFailure("cannot finish \(destination): \(String(cString: strerror(errno)))")
        }
        if close(output) != 0, failure == nil {
            failure = PublishFailure("cannot close \(destination): \(String(cString: strerror(errno)))")
        }
        if let failure { throw failure }
    }
}
