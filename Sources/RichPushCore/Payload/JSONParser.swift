/// Parses JSON text into a lossless `PushPayload.JSON`, within bounds.
///
/// The parser is recursive; `maximumDepth` bounds the recursion, so hostile nesting ends as an error, never a
/// stack overflow.
public struct JSONParser: Sendable {
    /// Bounds on the input.
    public struct Limits: Sendable, Hashable {
        /// The largest input, in bytes. Default 1 MiB: 256 times APNs' 4 KB payload limit, room for any real
        /// payload and its vendor extras while one bad input cannot take the process's memory (a parsed payload
        /// takes at most 5.2 times its size; see `parse`). At most 2 GiB - 1, what a tape entry can address.
        public var maximumBytes: Int = 1 << 20
        /// The deepest nesting of arrays and objects. Default 64: real payloads nest under 10 levels, and 64
        /// frames of recursion are far from the stack's limit.
        public var maximumDepth: Int = 64

        /// The documented defaults.
        public init() {}
    }

    /// The bounds this parser enforces.
    public var limits: Limits

    /// A parser with these bounds.
    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Parses one JSON document read from a file: `parse(_:)` after a UTF-8 byte-order mark, passed over when there
    /// is one (a file saved by some Windows editors; RFC 8259 lets a parser ignore it): payloads, `--conventions`
    /// files and `render`'s `--template` and `--data` read alike.
    public func parseFile(_ bytes: some Collection<UInt8>) throws(PayloadError) -> PushPayload.JSON {
        // The bytes as given when there is no mark: a slice of them takes the parser's generic path, which holds a
        // copy (each 1 MiB payload in flight in `stream` took 2.9 MiB, over PayloadMemoryTests' bound of 2.5).
        bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? try parse(bytes.dropFirst(3)) : try parse(bytes)
    }

    /// Parses one JSON document (surrounding white space allowed).
    ///
    /// The value returned reads the input in place (see `JSONDocument`): it keeps `bytes` (shared, when they are
    /// an array with at most an eighth spare; else a copy of exactly their size) and a tape of at most 4 bytes per
    /// input byte, so at most 5.2 times the input in all.
    /// - Throws: `PayloadError` with code `payload-too-large`, `invalid-utf8`, `not-json` or `too-deep`.
    public func parse(_ bytes: some Collection<UInt8>) throws(PayloadError) -> PushPayload.JSON {
        guard bytes.count <= limits.maximumBytes else {
            throw PayloadError(
                .payloadTooLarge, "the input is \(bytes.count) bytes; the limit is \(limits.maximumBytes)")
        }
        guard bytes.count <= JSONDocument.maximumBytes else {
            throw PayloadError(
                .payloadTooLarge,
                "the input is \(bytes.count) bytes; a document holds at most \(JSONDocument.maximumBytes)")
        }
        let text = Self.exactArray(bytes)
        if let offset = Self.firstInvalidUTF8(text) {
            throw PayloadError(.invalidUTF8, "the input is not valid UTF-8 (byte offset \(offset))")
        }
        var reader = Reader(bytes: text, maximumDepth: limits.maximumDepth)
        reader.skipWhitespace()
        reader.sawWhitespace = false
        try reader.value(depth: 1)
        let isCompact = !reader.sawWhitespace
        reader.skipWhitespace()
        guard reader.position == text.count else {
            throw reader.failure("unexpected text after the JSON value")
        }
        return JSONDocument(text: text, tape: reader.finishedTape(), isCompact: isCompact).value(at: 0)
    }

    /// `bytes` as an array that holds no more memory than it needs: the array itself when it is one with at most
    /// an eighth spare (the usual case: a line or a file read for this), else an exact copy.
    static func exactArray(_ bytes: some Collection<UInt8>) -> [UInt8] {
        if let array = bytes as? [UInt8], array.capacity - array.count <= array.count / 8 { return array }
        let count = bytes.count
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = buffer.initialize(fromContentsOf: bytes)
        }
    }

    /// The offset of the first byte that breaks UTF-8, or nil.
    static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBufferPointer { buffer -> Int? in
            let count = buffer.count
            guard let base = buffer.baseAddress else { return nil }
            var offset = 0
            while offset < count {
                // ASCII, the bulk of any payload, eight bytes at a time.
                while offset + 8 <= count,
                    UnsafeRawPointer(base + offset).loadUnaligned(as: UInt64.self) & 0x8080_8080_8080_8080 == 0
                {
                    offset += 8
                }
                guard offset < count else { return nil }
                let lead = base[offset]
                if lead < 0x80 {
                    offset += 1
                    continue
                }
                // The well-formed sequences of Unicode's table 3-7: the second byte's range depends on the first.
                let width: Int
                var second: ClosedRange<UInt8> = 0x80...0xBF
                switch lead {
                case 0xC2...0xDF: width = 2
                case 0xE0: width = 3; second = 0xA0...0xBF
                case 0xE1...0xEC, 0xEE...0xEF: width = 3
                case 0xED: width = 3; second = 0x80...0x9F
                case 0xF0: width = 4; second = 0x90...0xBF
                case 0xF1...0xF3: width = 4
                case 0xF4: width = 4; second = 0x80...0x8F
                default: return offset
                }
                guard offset + width <= count, second.contains(base[offset + 1]) else { return offset }
                for index in offset + 2..<offset + width where base[index] & 0xC0 != 0x80 { return offset }
                offset += width
            }
            return nil
        }
    }
}

/// Validates the text and writes its tape (see `JSONDocument`).
private struct Reader {
    let bytes: [UInt8]
    let maximumDepth: Int
    var position = 0
    var tape: [UInt32] = []
    /// Whether white space was skipped.
    var sawWhitespace = false

    init(bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
        // An entry per 16 bytes to start with (payloads measured at one per 3 to 20); the tape grows beyond.
        tape.reserveCapacity(bytes.count / 16 + 8)
    }

    /// The tape, without the spare room a grown array keeps (up to as much again as it uses).
    func finishedTape() -> [UInt32] {
        guard tape.capacity - tape.count > 16 else { return tape }
        return [UInt32](unsafeUninitializedCapacity: tape.count) { buffer, initialized in
            initialized = buffer.initialize(fromContentsOf: tape)
        }
    }

    func failure(_ message: String) -> PayloadError {
        PayloadError(.notJSON, "\(message) at byte offset \(position)")
    }

    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D:
                position += 1
                sawWhitespace = true
            default: return
            }
        }
    }

    mutating func value(depth: Int) throws(PayloadError) {
        guard position < bytes.count else { throw failure("unexpected end of input") }
        let start = UInt32(position)
        switch bytes[position] {
        case UInt8(ascii: "{"), UInt8(ascii: "["): try container(depth: depth)
        case UInt8(ascii: "\""): try string()
        case UInt8(ascii: "t"): tape.append(start); try literal("true")
        case UInt8(ascii: "f"): tape.append(start); try literal("false")
        case UInt8(ascii: "n"): tape.append(start); try literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): tape.append(start); try number()
        default: throw failure("unexpected character")
        }
    }

    mutating func enter(depth: Int) throws(PayloadError) {
        guard depth <= maximumDepth else {
            throw PayloadError(.tooDeep, "nesting deeper than \(maximumDepth) levels at byte offset \(position)")
        }
    }

    /// An object or an array: its opening entry, its members or elements, then the index past them in the
    /// second entry.
    mutating func container(depth: Int) throws(PayloadError) {
        try enter(depth: depth)
        let isObject = bytes[position] == UInt8(ascii: "{")
        let close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
        let kind = isObject ? "an object" : "an array"
        let entry = tape.count
        tape.append(UInt32(position))
        tape.append(0)
        position += 1
        skipWhitespace()
        if position < bytes.count, bytes[position] == close {
            position += 1
            tape[entry + 1] = UInt32(tape.count)
            return
        }
        while true {
            skipWhitespace()
            if isObject {
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                    throw failure("expected a member name")
                }
                try string()
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                    throw failure("expected ':'")
                }
                position += 1
                skipWhitespace()
            }
            try value(depth: depth + 1)
            skipWhitespace()
            guard position < bytes.count else { throw failure("unexpected end of input in \(kind)") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            if bytes[position] == close {
                position += 1
                tape[entry + 1] = UInt32(tape.count)
                return
            }
            throw failure("expected ',' or '\(Character(Unicode.Scalar(close)))'")
        }
    }

    mutating func literal(_ word: StaticString) throws(PayloadError) {
        let count = word.utf8CodeUnitCount
        guard position + count <= bytes.count else { throw failure("unexpected end of input") }
        for index in 0..<count where bytes[position + index] != word.utf8Start[index] {
            throw failure("unexpected character")
        }
        position += count
    }

    mutating func number() throws(PayloadError) {
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        guard position < bytes.count, isDigit(bytes[position]) else { throw failure("a number needs digits") }
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
        } else {
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard position < bytes.count, isDigit(bytes[position]) else { throw failure("a fraction needs digits") }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard position < bytes.count, isDigit(bytes[position]) else { throw failure("an exponent needs digits") }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
    }

    func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// A string (a value or a key): checked, not decoded; its entry says whether it has escapes.
    mutating func string() throws(PayloadError) {
        let start = position
        position += 1
        var escaped = false
        while true {
            guard position < bytes.count else { throw failure("unterminated string") }
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                position += 1
                tape.append(UInt32(start) | (escaped ? JSONDocument.escapedFlag : 0))
                return
            }
            if byte < 0x20 { throw failure("a control character must be escaped in a string") }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                try escape()
                continue
            }
            position += 1
        }
    }

    /// Checks the escape at `position` (a backslash) and steps over it.
    mutating func escape() throws(PayloadError) {
        position += 1
        guard position < bytes.count else { throw failure("unterminated escape") }
        switch bytes[position] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
            UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            position += 1
        case UInt8(ascii: "u"):
            position += 1
            guard position + 4 <= bytes.count else { throw failure("unterminated \\u escape") }
            for _ in 0..<4 {
                switch bytes[position] {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
                    UInt8(ascii: "A")...UInt8(ascii: "F"):
                    position += 1
                default: throw failure("invalid \\u escape")
                }
            }
        default:
            throw failure("invalid escape")
        }
    }
}
