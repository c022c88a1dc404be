#if canImport(Glibc)
    import Glibc
#endif

/// Splits a descriptor into lines with a `LineSplitter`.
package struct LineReader {
    private let descriptor: Int32
    private var splitter: LineSplitter
    private var finished = false
    /// The read buffer, made at the first read and kept: made (and zeroed) at every `next()`, 64 KiB a line, it
    /// was 1.4% of the campaign's samples in `memset` alone, plus the allocator's work (bench (b), `perf record`).
    private var chunk: [UInt8] = []

    package init(descriptor: Int32, limit: Int) {
        self.descriptor = descriptor
        splitter = LineSplitter(limit: limit)
    }

    /// The `errno` of a read that failed, which ended the input (nil: none failed).
    package private(set) var failure: Int32?

    /// Whether a whole line is already buffered (the next `next()` will not read).
    package var hasBufferedLine: Bool { splitter.hasLine }

    /// The next line without its newline (a final line without one counts), or nil at the end. After a read that
    /// failed (`failure`), the lines read whole before it, and not the part of one it cut.
    package mutating func next() -> LineSplitter.Line? {
        while true {
            if let line = splitter.next(atEnd: finished && failure == nil) { return line }
            if finished { return nil }
            if chunk.isEmpty { chunk = [UInt8](repeating: 0, count: 64 * 1024) }
            let count = Glibc.read(descriptor, &chunk, chunk.count)
            if count < 0, errno == EINTR || (errno == EAGAIN && FileDescriptorWait.readable(descriptor)) { continue }
            if count < 0 { failure = errno }
            if count <= 0 {
                finished = true
            } else {
                splitter.append(chunk[..<count])
            }
        }
    }
}
