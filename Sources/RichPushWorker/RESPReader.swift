#if canImport(Glibc)
    import Glibc
#endif

/// Where a `RESPReader` gets its bytes: a socket, or bytes a test gives it.
protocol RESPSource {
    /// Reads into `buffer`; the number of bytes read, 0 at the end of the stream.
    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(RedisError) -> Int
}

/// Reads Redis replies (RESP2) as their bytes arrive, holding none of them whole: the caller reads each value's
/// header, then keeps a bulk string (when it is no longer than the caller's cap) or skips it, its bytes read and
/// dropped a buffer at a time. So a reply's memory is what the caller keeps plus one buffer, whatever its size;
/// hiredis would hold a bulk string whole in its read buffer, then again as its reply object.
struct RESPReader<Source: RESPSource> {
    /// A value's first line.
    enum Header: Equatable {
        case array(Int)
        case bulk(Int)
        /// A null bulk string or array.
        case null
        case integer(Int)
        case status([UInt8])
        case error([UInt8])
    }

    /// The longest line (a header, a status or an error) read. Redis's are under a hundred bytes, its error
    /// messages a few hundred.
    static var lineLimit: Int { 64 * 1024 }

    /// The largest length or count taken: 2^40, a terabyte or a trillion values, beyond what Redis sends (its
    /// `proto-max-bulk-len` is 512 MB by default); the values a skip has still to read are held to it too (nested
    /// counts summed, which millions of 2^40 headers would overflow).
    static var countLimit: Int { 1 << 40 }

    private var source: Source
    private var buffer: [UInt8]
    private var start = 0
    private var end = 0

    /// A reader of `source` with a buffer of `bufferSize` bytes (at least `lineLimit` + 2, so a line fits).
    init(_ source: Source, bufferSize: Int = 64 * 1024 + 2) {
        self.source = source
        buffer = [UInt8](repeating: 0, count: max(bufferSize, Self.lineLimit + 2))
    }

    /// Whether bytes past the last value read are buffered: after a whole reply there must be none (no command was
    /// pipelined), else the connection is out of step.
    var hasBufferedBytes: Bool { start < end }

    /// The next value's header.
    mutating func header() throws(RedisError) -> Header {
        let line = try self.line()
        guard let kind = line.first else { throw Self.protocolError("an empty line") }
        let rest = line.dropFirst()
        switch kind {
        case UInt8(ascii: "+"): return .status(Array(rest))
        case UInt8(ascii: "-"): return .error(Array(rest))
        case UInt8(ascii: ":"): return .integer(try Self.number(rest))
        case UInt8(ascii: "$"), UInt8(ascii: "*"):
            let count = try Self.number(rest)
            if count == -1 { return .null }
            guard count >= 0 else { throw Self.protocolError("a negative length") }
            guard count <= Self.countLimit else { throw Self.protocolError("a length over \(Self.countLimit)") }
            return kind == UInt8(ascii: "$") ? .bulk(count) : .array(count)
        default:
            throw Self.protocolError("an unknown type byte \(kind)")
        }
    }

    /// A bulk string's `length` bytes and the line end after them: the bytes when `keep`, else nil (read and
    /// dropped).
    mutating func body(_ length: Int, keep: Bool) throws(RedisError) -> [UInt8]? {
        var kept: [UInt8]? = keep ? [] : nil
        kept?.reserveCapacity(length)
        var left = length
        while left > 0 {
            if start == end { try fill() }
            let count = min(left, end - start)
            if keep { kept! += buffer[start..<(start + count)] }
            start += count
            left -= count
        }
        while end - start < 2 { try fill() }
        guard buffer[start] == 0x0D, buffer[start + 1] == 0x0A else {
            throw Self.protocolError("a bulk string not ended by CRLF")
        }
        start += 2
        return kept
    }

    /// Skips one whole value (an array with everything in it), holding none of it.
    mutating func skipValue() throws(RedisError) {
        try skip(after: try header())
    }

    /// Skips the rest of the value whose `header` was just read: a bulk string's bytes, an array's values.
    mutating func skip(after header: Header) throws(RedisError) {
        // Counted, not recursive: a hostile nesting costs no stack.
        var values = 0
        var next = header
        while true {
            switch next {
            case .array(let count):
                // Each count is at most `countLimit`, and so is their sum: no overflow.
                values += count
                guard values <= Self.countLimit else {
                    throw Self.protocolError("a reply of over \(Self.countLimit) values")
                }
            case .bulk(let length): _ = try body(length, keep: false)
            default: break
            }
            guard values > 0 else { return }
            values -= 1
            next = try self.header()
        }
    }

    /// The next line, without its CRLF.
    private mutating func line() throws(RedisError) -> ArraySlice<UInt8> {
        var searched = 0
        while true {
            if let newline = buffer[(start + searched)..<end].firstIndex(of: 0x0A) {
                guard newline > start, buffer[newline - 1] == 0x0D else {
                    throw Self.protocolError("a line not ended by CRLF")
                }
                let line = buffer[start..<(newline - 1)]
                start = newline + 1
                return line
            }
            searched = end - start
            guard searched <= Self.lineLimit + 1 else {
                throw Self.protocolError("a line over \(Self.lineLimit) bytes")
            }
            try fill()
        }
    }

    /// Reads more bytes after those buffered, moving them to the front first when the buffer's end is reached.
    private mutating func fill() throws(RedisError) {
        if start == end {
            start = 0
            end = 0
        } else if end == buffer.count {
            buffer.withUnsafeMutableBytes { bytes in
                bytes.baseAddress!.copyMemory(from: bytes.baseAddress! + start, byteCount: end - start)
            }
            end -= start
            start = 0
        }
        let read = buffer.withUnsafeMutableBytes { bytes in
            Result { () throws(RedisError) in
                try source.read(into: UnsafeMutableRawBufferPointer(rebasing: bytes[end...]))
            }
        }
        let count = try read.get()
        guard count > 0 else { throw RedisError(.closed, detail: "the server closed the connection") }
        end += count
    }

    /// A decimal number, optionally negative, of at most 18 digits (no length comes near).
    private static func number(_ digits: ArraySlice<UInt8>) throws(RedisError) -> Int {
        let negative = digits.first == UInt8(ascii: "-")
        let body = negative ? digits.dropFirst() : digits
        guard !body.isEmpty, body.count <= 18 else { throw protocolError("a malformed number") }
        var value = 0
        for digit in body {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else {
                throw protocolError("a malformed number")
            }
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
        }
        return negative ? -value : value
    }

    static func protocolError(_ what: String) -> RedisError {
        RedisError(.protocolViolation, detail: "protocol error: \(what) in the server's reply")
    }
}

/// A socket whose reply must keep coming: each `window` (the connection's timeout) must bring `leastBytes`, or the
/// rest of a shorter reply, else the read is cut. Each read waits (`poll`) only until the window's end, so a server
/// that trickles a reply a byte at a time (each read within the socket's own SO_RCVTIMEO, which hiredis sets) is
/// cut there, and a large reply over a slow link (30 MB at 4 MB/s) is read whole.
struct SocketSource: RESPSource {
    let descriptor: Int32
    let window: Duration
    /// 64 KiB: a link slower than 13 KB/s over a 5 s window is not one Redis serves a worker over.
    static let leastBytes = 64 * 1024
    private var windowEnd: ContinuousClock.Instant
    private var windowBytes = 0

    /// Reads `descriptor`, the first window starting now (the command was just sent).
    init(descriptor: Int32, window: Duration) {
        self.descriptor = descriptor
        self.window = window
        windowEnd = .now + window
    }

    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(RedisError) -> Int {
        while true {
            let left = (windowEnd - .now).inMilliseconds
            var socket = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = left > 0 ? poll(&socket, 1, Int32(clamping: left)) : 0
            if ready < 0, errno == EINTR { continue }
            if ready == 0 { throw RedisError(.replyTimedOut, detail: RedisError.replyTimeout) }
            let count = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
            if count >= 0 {
                windowBytes += count
                if windowBytes >= Self.leastBytes {
                    windowBytes = 0
                    windowEnd = .now + window
                }
                return count
            }
            if errno == EINTR { continue }
            let reason =
                errno == EAGAIN || errno == EWOULDBLOCK
                ? RedisError.replyTimeout : String(cString: strerror(errno))
            throw RedisError(.io, detail: reason)
        }
    }
}
