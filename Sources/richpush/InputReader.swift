#if canImport(Glibc)
    import Glibc
#endif
import RichPush

/// Reads inputs within a byte bound, never holding more than the bound plus one read.
enum InputReader {
    /// The whole of a file (or standard input for `-`), or why it is not a payload (`unreadable`, `too-large`).
    static func read(_ path: String, limit: Int) -> Result<[UInt8], PayloadError> {
        let descriptor = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            return .failure(PayloadError(.unreadable, "\(path): \(String(cString: strerror(errno)))"))
        }
        defer { if descriptor != 0 { close(descriptor) } }
        var status = stat()
        if fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR {
            return .failure(PayloadError(.unreadable, "\(path) is a directory"))
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = Glibc.read(descriptor, &chunk, chunk.count)
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(PayloadError(.unreadable, "\(path): \(String(cString: strerror(errno)))"))
            }
            if count == 0 { return .success(bytes) }
            bytes += chunk[..<count]
            if bytes.count > limit {
                return .failure(PayloadError(.tooLarge, "\(path) is larger than \(limit) bytes"))
            }
        }
    }
}

/// Splits a descriptor into lines, each bounded: a longer line is reported as too long and skipped to its
/// end without being held.
struct LineReader {
    enum Line {
        case text([UInt8])
        case tooLong(Int)
    }

    private let descriptor: Int32
    private let limit: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var finished = false

    init(descriptor: Int32, limit: Int) {
        self.descriptor = descriptor
        self.limit = limit
    }

    /// Whether a whole line is already buffered (the next `next()` will not read).
    var hasBufferedLine: Bool { buffer[start...].contains(0x0A) }

    /// The next line without its newline (a final line without one counts), or nil at the end.
    mutating func next() -> Line? {
        var skipping = false
        var skipped = 0
        while true {
            if let newline = buffer[start...].firstIndex(of: 0x0A) {
                let line = Array(buffer[start..<newline])
                start = newline + 1
                if skipping { return .tooLong(skipped + line.count) }
                return line.count > limit ? .tooLong(line.count) : .text(line)
            }
            if buffer.count - start > limit {
                skipping = true
                skipped += buffer.count - start
                buffer = []
                start = 0
            }
            if finished {
                guard start < buffer.count || skipping else { return nil }
                let line = Array(buffer[start...])
                buffer = []
                start = 0
                if skipping { return .tooLong(skipped + line.count) }
                return .text(line)
            }
            if start > 0 {
                buffer.removeSubrange(0..<start)
                start = 0
            }
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            let count = Glibc.read(descriptor, &chunk, chunk.count)
            if count < 0, errno == EINTR { continue }
            if count <= 0 {
                finished = true
            } else {
                buffer += chunk[..<count]
            }
        }
    }
}
