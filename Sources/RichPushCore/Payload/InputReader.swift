#if canImport(Glibc)
    import Glibc
#endif

/// Reads inputs within a byte bound, never holding more than the bound plus one read.
package enum InputReader {
    /// The whole of a file (or standard input for `-`), or why it is not a payload (`unreadable`, `too-large`).
    package static func read(_ path: String, limit: Int) -> Result<[UInt8], PayloadError> {
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

/// Splits bytes, as they arrive, into lines, each bounded: a longer line is reported as too long and skipped
/// to its end without being held. Holds at most the limit plus the last chunk appended.
package struct LineSplitter: Sendable {
    package enum Line: Sendable {
        case text([UInt8])
        /// A line over the limit, and how long it was.
        case tooLong(Int)
    }

    private let limit: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var skipping = false
    private var skipped = 0

    package init(limit: Int) { self.limit = limit }

    /// A splitter over the whole of an input already in memory (a request's body), which it shares rather than
    /// copies: a 64 MiB batch is not held twice.
    package init(limit: Int, whole bytes: [UInt8]) {
        self.limit = limit
        buffer = bytes
    }

    /// Whether a whole line is buffered (the next `next` returns one without more input).
    package var hasLine: Bool { buffer[start...].contains(0x0A) }

    /// Adds the next bytes of the input.
    package mutating func append(_ bytes: some Collection<UInt8>) {
        if start > 0 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        buffer += bytes
    }

    /// The next whole line without its newline, or nil when none is buffered. At the end of the input
    /// (`atEnd`), a final line without a newline counts.
    package mutating func next(atEnd: Bool) -> Line? {
        if let newline = buffer[start...].firstIndex(of: 0x0A) {
            let count = newline - start
            let line = Array(buffer[start..<newline])
            start = newline + 1
            return finish(line, count: count)
        }
        if buffer.count - start > limit {
            skipping = true
            skipped += buffer.count - start
            buffer = []
            start = 0
        }
        guard atEnd, start < buffer.count || skipping else { return nil }
        let line = Array(buffer[start...])
        buffer = []
        start = 0
        return finish(line, count: line.count)
    }

    private mutating func finish(_ line: [UInt8], count: Int) -> Line {
        guard skipping else { return count > limit ? .tooLong(count) : .text(line) }
        defer {
            skipping = false
            skipped = 0
        }
        return .tooLong(skipped + count)
    }
}

/// Splits a descriptor into lines with a `LineSplitter`.
package struct LineReader {
    private let descriptor: Int32
    private var splitter: LineSplitter
    private var finished = false

    package init(descriptor: Int32, limit: Int) {
        self.descriptor = descriptor
        splitter = LineSplitter(limit: limit)
    }

    /// Whether a whole line is already buffered (the next `next()` will not read).
    package var hasBufferedLine: Bool { splitter.hasLine }

    /// The next line without its newline (a final line without one counts), or nil at the end.
    package mutating func next() -> LineSplitter.Line? {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            if let line = splitter.next(atEnd: finished) { return line }
            if finished { return nil }
            let count = Glibc.read(descriptor, &chunk, chunk.count)
            if count < 0, errno == EINTR { continue }
            if count <= 0 {
                finished = true
            } else {
                splitter.append(chunk[..<count])
            }
        }
    }
}
