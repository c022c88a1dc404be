#if canImport(Glibc)
    import Glibc
#endif

/// The few file-system operations the store and the CLI need, on POSIX calls directly, so that neither needs
/// Foundation (FoundationEssentials alone costs about 1.5 MB of resident memory per process).
package enum FileSystem {
    /// Reads the file at `path` (never through a link; a regular file alone, else EINVAL) in chunks of 256 KiB,
    /// handing each to `body`, which returns false to stop. Returns nil when it was read to the end or `body`
    /// stopped, else the errno of the open or read that failed.
    package static func readChunks(_ path: String, _ body: (UnsafeRawBufferPointer) -> Bool) -> Int32? {
        var buffer = readBuffer(count: 256 * 1024)
        return readChunks(path, buffer: &buffer, body)
    }

    /// A buffer of `count` bytes for `readChunks` to read into, left as the allocator gives it: every byte is
    /// written by `read` before it is looked at, and clearing 64 KiB for each file hashed was work on every
    /// payload's path.
    package static func readBuffer(count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { _, initialized in initialized = count }
    }

    /// `readChunks(_:_:)` through the caller's `buffer` (not empty), read into as much as it holds at a time: a
    /// thread reading many files reuses one buffer.
    package static func readChunks(
        _ path: String, buffer: inout [UInt8], _ body: (UnsafeRawBufferPointer) -> Bool
    ) -> Int32? {
        precondition(!buffer.isEmpty, "readChunks needs a buffer to read into")
        let descriptor: Int32
        switch openRegularFile(path, followingLinks: false) {
        case .success(let opened): descriptor = opened
        case .failure(let failed): return failed.code
        }
        defer { close(descriptor) }
        return readChunks(descriptor, buffer: &buffer, body)
    }

    /// The errno of a failed `openRegularFile`.
    package struct OpenFailure: Error {
        package let code: Int32
    }

    /// Opens `path` (relative to the open directory `directory` when given) for reading, without blocking, when it is
    /// a regular file (links followed only with `followingLinks`): the descriptor, to close, else the errno (EINVAL
    /// when it is no regular file). A FIFO put at the name (raced in after a caller's `lstat`, in a published
    /// directory others may write) blocked an open, and its thread, for ever; its reads would block too.
    package static func openRegularFile(
        _ path: String, in directory: Int32 = AT_FDCWD, followingLinks: Bool
    ) -> Result<Int32, OpenFailure> {
        let descriptor = openat(directory, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (followingLinks ? 0 : O_NOFOLLOW))
        guard descriptor >= 0 else { return .failure(OpenFailure(code: errno)) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            let code = info.st_mode & S_IFMT == S_IFREG ? errno : EINVAL
            close(descriptor)
            return .failure(OpenFailure(code: code))
        }
        return .success(descriptor)
    }

    /// `readChunks(_:buffer:_:)` of a file the caller opened, from where it stands.
    package static func readChunks(
        _ descriptor: Int32, buffer: inout [UInt8], _ body: (UnsafeRawBufferPointer) -> Bool
    ) -> Int32? {
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return errno }
            guard count > 0, buffer.withUnsafeBytes({ body(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) })
            else { return nil }
        }
    }

    /// Writes all of `bytes` to `descriptor`, again after an interrupted or short write; nil once written, else the
    /// errno of the write that failed (EIO for one that wrote nothing).
    package static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return written < 0 ? errno : EIO }
            offset += written
        }
        return nil
    }

    /// `mkdir -p` with mode `mode` for every directory it makes; true when `path` is a directory at the end.
    package static func makeDirectories(_ path: String, mode: mode_t) -> Bool {
        if mkdir(path, mode) == 0 || errno == EEXIST { return isDirectory(path) }
        guard errno == ENOENT else { return false }
        let parent = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        guard !parent.isEmpty, parent != path, makeDirectories(parent, mode: mode) else { return false }
        return mkdir(path, mode) == 0 || (errno == EEXIST && isDirectory(path))
    }

    /// Why the file at `path` cannot be a bundle of CA certificates for libcurl and OpenSSL, or nil when it can
    /// (`readCertificateBundle`'s failure).
    /// Without this, a bundle that is not one was taken at start, and every https transfer failed `tls` after.
    package static func certificateBundleProblem(_ path: String) -> (code: EnrichmentProblem.Code, detail: String)? {
        if case .failure(let problem) = readCertificateBundle(path) { return (problem.code, problem.detail) }
        return nil
    }

    /// Why a file cannot be a CA bundle (`readCertificateBundle`).
    package struct CertificateBundleProblem: Error {
        package let code: EnrichmentProblem.Code
        package let detail: String
    }

    /// The bytes of the CA bundle at `path`, read whole: `unreadable` when it is not a regular file that can be read
    /// (a directory, a FIFO, a device, missing, not permitted; opened without blocking, so a FIFO is refused, never
    /// waited on), `malformed` when it is larger than `certificateBundleLimit` or holds no PEM certificate
    /// (`-----BEGIN CERTIFICATE-----`, or OpenSSL's `TRUSTED` and `X509` forms). Links are followed (a system's
    /// bundle is often one).
    package static func readCertificateBundle(_ path: String) -> Result<[UInt8], CertificateBundleProblem> {
        let unreadable = CertificateBundleProblem(code: .unreadable, detail: "cannot read '\(path)'")
        let descriptor: Int32
        switch openRegularFile(path, followingLinks: true) {
        case .success(let opened): descriptor = opened
        case .failure(let failed) where failed.code == EINVAL:
            return .failure(
                CertificateBundleProblem(code: .unreadable, detail: "cannot read '\(path)': not a regular file"))
        case .failure: return .failure(unreadable)
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = readBuffer(count: 64 * 1024)
        let failed = readChunks(descriptor, buffer: &buffer) { chunk in
            bytes += chunk
            return bytes.count <= certificateBundleLimit
        }
        if failed != nil { return .failure(unreadable) }
        guard bytes.count <= certificateBundleLimit else {
            return .failure(
                CertificateBundleProblem(
                    code: .malformed,
                    detail: "'\(path)' is larger than 8 MB, which no CA bundle is"))
        }
        let markers = [
            "-----BEGIN CERTIFICATE-----", "-----BEGIN TRUSTED CERTIFICATE-----", "-----BEGIN X509 CERTIFICATE-----",
        ]
        guard markers.contains(where: { bytes.firstRange(of: Array($0.utf8)) != nil }) else {
            return .failure(
                CertificateBundleProblem(
                    code: .malformed, detail: "'\(path)' holds no PEM certificate (no BEGIN CERTIFICATE line)"))
        }
        return .success(bytes)
    }

    /// The largest CA bundle `readCertificateBundle` reads: 8 MB, some forty times a system's bundle (Debian 12's: 139
    /// certificates in 214 KB), and the most libcurl 7.88 takes as a blob (`CURL_MAX_INPUT_LENGTH`, 8,000,000 bytes),
    /// which is how a bundle is given where no copy in memory can be made (`CertificateBundleCopy.Source.bytes`).
    package static let certificateBundleLimit = 8_000_000

    /// Whether `path` is a directory (following links).
    package static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// The temporary directory: `$TMPDIR`, or `/tmp` when TMPDIR is unset or empty; no trailing slash.
    package static var temporaryDirectory: String {
        temporaryDirectory(TMPDIR: getenv("TMPDIR").map { String(cString: $0) })
    }

    /// The temporary directory for this value of TMPDIR (nil when unset).
    package static func temporaryDirectory(TMPDIR value: String?) -> String {
        let base = value.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        return base.hasSuffix("/") ? String(base.dropLast()) : base
    }

    /// The current directory.
    package static func currentDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return "." }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
