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
    /// Where the search for the next newline resumes: the bytes from `start` up to here hold none. Without it, a
    /// long line arriving in small writes was searched again from its start at each one (an 8 MB line in writes of
    /// 512 bytes: 1.9 s of CPU).
    private var scanned = 0
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
    package var hasLine: Bool { buffer[max(start, scanned)...].contains(0x0A) }

    /// Adds the next bytes of the input.
    package mutating func append(_ bytes: some Collection<UInt8>) {
        if start > 0 {
            buffer.removeSubrange(0..<start)
            scanned = max(0, scanned - start)
            start = 0
        }
        buffer += bytes
    }

    /// The next whole line without its newline (nor the CR before it: CRLF line ends), or nil when none is
    /// buffered. At the end of the input (`atEnd`), a final line without a newline counts.
    package mutating func next(atEnd: Bool) -> Line? {
        if let newline = buffer[max(start, scanned)...].firstIndex(of: 0x0A) {
            // A CR before the newline is the line end's, not the payload's: neither counted nor handed on (the
            // parser bounds what it is given too).
            let end = newline > start && buffer[newline - 1] == 0x0D ? newline - 1 : newline
            // A line over the limit is not copied to be refused (a 60 MiB line of a request's body was).
            let line = skipping || end - start > limit ? [] : Array(buffer[start..<end])
            let count = end - start
            start = newline + 1
            scanned = start
            return finish(line, count: count)
        }
        scanned = buffer.count
        // One byte of room for the CR of a line of exactly the limit, whose newline has not come yet.
        if buffer.count - start > limit + 1 {
            // A CR last stays buffered: the newline after it may end the line, and then it is not counted.
            let keepsCR = buffer[buffer.count - 1] == 0x0D
            skipping = true
            skipped += buffer.count - start - (keepsCR ? 1 : 0)
            buffer = keepsCR ? [0x0D] : []
            start = 0
            scanned = 0
        }
        guard atEnd, start < buffer.count || skipping else { return nil }
        let end = buffer.count > start && buffer[buffer.count - 1] == 0x0D ? buffer.count - 1 : buffer.count
        let line = skipping || end - start > limit ? [] : Array(buffer[start..<end])
        let count = end - start
        buffer = []
        start = 0
        scanned = 0
        return finish(line, count: count)
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
