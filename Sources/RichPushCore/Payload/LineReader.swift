#if canImport(Glibc)
    import Glibc
#endif

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
