#if canImport(Glibc)
    import Glibc
#endif

/// A file that holds a secret (a password, a token) on its first line. It must be a regular file: it is opened
/// without blocking (a FIFO would hold the start until someone writes to it; a device may never end) and checked
/// before anything is read. One that group or others may read is read with a warning: the secret is then not one.
enum SecretFile {
    /// The most bytes read for the first line: a secret is a line, not a document.
    static let limit = 64 * 1024

    /// The first line of the file at `path`, without its `\n` or `\r\n`; it must not be empty. `option` names the
    /// flag in messages (`--redis-password-file`); `warn` gets a line when group or others may read the file.
    /// - Throws: `UsageError` when the file cannot be opened, is not a regular file, or has no first line within
    ///   `limit` bytes. No message holds any of the file's bytes.
    static func firstLine(of path: String, option: String, warn: (String) -> Void) throws(UsageError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else { throw UsageError("\(option): \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw UsageError("\(option): \(path): \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw UsageError("\(option): '\(path)' is not a regular file (\(kind(status.st_mode)))")
        }
        if status.st_mode & 0o044 != 0 {
            let mode = String(status.st_mode & 0o777, radix: 8)
            warn(
                "richpush: warning: \(option) '\(path)' can be read by group or others (mode 0\(mode)); chmod 600 it")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !bytes.contains(0x0A), bytes.count <= limit {
            let count = read(descriptor, &chunk, chunk.count)
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw UsageError("\(option): \(path): \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            bytes += chunk[..<count]
        }
        var line = bytes.prefix { $0 != 0x0A }
        guard line.count <= limit else {
            throw UsageError("\(option): the first line of '\(path)' is over \(limit) bytes")
        }
        if line.last == 0x0D { line = line.dropLast() }
        guard !line.isEmpty else { throw UsageError("\(option): the first line of '\(path)' is empty") }
        return Array(line)
    }

    private static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: return "a directory"
        case S_IFIFO: return "a FIFO"
        case S_IFCHR, S_IFBLK: return "a device"
        case S_IFSOCK: return "a socket"
        default: return "not a plain file"
        }
    }
}
