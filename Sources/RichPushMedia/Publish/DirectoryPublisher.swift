import RichPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// The built-in publisher: each attachment copied, content-addressed, to `directory/<sha256>.<ext>` (mode 0644,
/// written under a hidden temporary name and linked into place, so a file there is always whole; one already
/// there is kept: same name, same bytes), and published as `baseURL/<sha256>.<ext>`. Point a web server or CDN
/// origin at the directory.
public struct DirectoryPublisher: MediaPublisher {
    /// Where files are published.
    public let directory: String
    /// The URL the directory is served under, without a trailing slash.
    public let baseURL: String

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
        if access(target, F_OK) == 0 { return url }
        guard FileSystem.makeDirectories(directory, mode: 0o755) else {
            throw PublishFailure("cannot make \(directory): \(String(cString: strerror(errno)))")
        }
        let temporary = directory + "/." + name + "." + RandomName.uuid() + ".tmp"
        defer { unlink(temporary) }
        try Self.copy(media.path, to: temporary)
        // link, not rename: a file already in place (another process published the same bytes) stays as it was.
        guard link(temporary, target) == 0 || errno == EEXIST else {
            throw PublishFailure("cannot link \(target): \(String(cString: strerror(errno)))")
        }
        return url
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
