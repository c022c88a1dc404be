#if canImport(Glibc)
    import Glibc
#endif

/// Reads inputs within a byte bound, never holding more than the bound plus one read.
package enum InputReader {
    /// The whole of a file (or standard input for `-`), or why it is not a payload (`unreadable`, `payload-too-large`).
    package static func read(_ path: String, limit: Int) -> Result<[UInt8], PayloadError> {
        // Opened without blocking: a FIFO no process writes to kept `open` waiting for a writer forever (an input
        // beside it never ran, the deadline never came); so opened, then read as usual, it reads as empty. A pipe
        // with a writer (`<(command)`) reads as before.
        let descriptor = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            return .failure(PayloadError(.unreadable, "\(path): \(String(cString: strerror(errno)))"))
        }
        defer { if descriptor != 0 { close(descriptor) } }
        if descriptor != 0 {
            let flags = fcntl(descriptor, F_GETFL)
            if flags >= 0 { _ = fcntl(descriptor, F_SETFL, flags & ~O_NONBLOCK) }
        }
        var status = stat()
        if fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR {
            return .failure(PayloadError(.unreadable, "\(path) is a directory"))
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = Glibc.read(descriptor, &chunk, chunk.count)
            if count < 0 {
                if errno == EINTR || (errno == EAGAIN && FileDescriptorWait.readable(descriptor)) { continue }
                return .failure(PayloadError(.unreadable, "\(path): \(String(cString: strerror(errno)))"))
            }
            if count == 0 { return .success(bytes) }
            bytes += chunk[..<count]
            // Whitespace past the bound is no part of the payload (render's output ends with a newline): dropped,
            // and only there, so a payload of exactly the bound and its newline is read.
            while bytes.count > limit, let last = bytes.last,
                last == 0x20 || last == 0x0A || last == 0x0D || last == 0x09
            {
                bytes.removeLast()
            }
            if bytes.count > limit {
                return .failure(PayloadError(.payloadTooLarge, "\(path) is larger than \(limit) bytes"))
            }
        }
    }
}
