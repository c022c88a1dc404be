/// Parses JSON text into a lossless `JSONValue`, within bounds.
///
/// The parser is recursive; `maximumDepth` bounds the recursion, so hostile nesting ends as an error, never a
/// stack overflow.
public struct JSONParser: Sendable {
    /// Bounds on the input.
    public struct Limits: Sendable, Hashable {
        /// The largest input, in bytes. Default 1 MiB: 256 times APNs' 4 KB payload limit, room for any real
        /// payload and its vendor extras while one bad input cannot take the process's memory.
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

    /// Parses one JSON document (surrounding white space allowed).
    /// - Throws: `PayloadError` with code `too-large`, `invalid-utf8`, `not-json` or `too-deep`.
    public func parse(_ bytes: some Collection<UInt8>) throws(PayloadError) -> JSONValue {
        guard bytes.count <= limits.maximumBytes else {
            throw PayloadError(.tooLarge, "the input is \(bytes.count) bytes; the limit is \(limits.maximumBytes)")
        }
        let array = Array(bytes)
        if let offset = Self.firstInvalidUTF8(array) {
            throw PayloadError(.invalidUTF8, "the input is not valid UTF-8 (byte offset \(offset))")
        }
        var reader = Reader(bytes: array, maximumDepth: limits.maximumDepth)
        reader.skipWhitespace()
        let value = try reader.value(depth: 1)
        reader.skipWhitespace()
        guard reader.position == array.count else {
            throw reader.failure("unexpected text after the JSON value")
        }
        return value
    }

    /// The offset of the first byte that breaks UTF-8, or nil.
    static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int? {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        var offset = 0
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar):
                offset += UTF8.width(scalar)
            case .emptyInput:
                return nil
            case .error:
                return offset
            }
        }
    }
}

private struct Reader {
    let bytes: [UInt8]
    let maximumDepth: Int
    var position = 0

    init(bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    func failure(_ message: String) -> PayloadError {
        PayloadError(.notJSON, "\(message) at byte offset \(position)")
    }

    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    mutating func value(depth: Int) throws(PayloadError) -> JSONValue {
        guard position < bytes.count else { throw failure("unexpected end of input") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return .object(try object(depth: depth))
        case UInt8(ascii: "["): return .array(try array(depth: depth))
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw failure("unexpected character")
        }
    }

    mutating func enter(depth: Int) throws(PayloadError) {
        guard depth <= maximumDepth else {
            throw PayloadError(.tooDeep, "nesting deeper than \(maximumDepth) levels at byte offset \(position)")
        }
    }

    mutating func object(depth: Int) throws(PayloadError) -> JSONObject {
        try enter(depth: depth)
        position += 1
        var members: [JSONObject.Member] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return JSONObject(members: members)
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                throw failure("expected a member name")
            }
            let key = try string()
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw failure("expected ':'") }
            position += 1
            skipWhitespace()
            let member = try value(depth: depth + 1)
            members.append((key, member))
            skipWhitespace()
            guard position < bytes.count else { throw failure("unexpected end of input in an object") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            if bytes[position] == UInt8(ascii: "}") {
                position += 1
                return JSONObject(members: members)
            }
            throw failure("expected ',' or '}'")
        }
    }

    mutating func array(depth: Int) throws(PayloadError) -> [JSONValue] {
        try enter(depth: depth)
        position += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return elements
        }
        while true {
            skipWhitespace()
            elements.append(try value(depth: depth + 1))
            skipWhitespace()
            guard position < bytes.count else { throw failure("unexpected end of input in an array") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            if bytes[position] == UInt8(ascii: "]") {
                position += 1
                return elements
            }
            throw failure("expected ',' or ']'")
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

    mutating func number() throws(PayloadError) -> String {
        let start = position
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
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    mutating func string() throws(PayloadError) -> JSONString {
        position += 1
        let start = position
        var decoded: [UInt8]? = nil
        while true {
            guard position < bytes.count else { throw failure("unterminated string") }
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let raw = bytes[start..<position]
                position += 1
                guard let decoded else {
                    return JSONString(value: String(decoding: raw, as: UTF8.self), literal: nil)
                }
                return JSONString(
                    value: String(decoding: decoded, as: UTF8.self),
                    literal: String(decoding: raw, as: UTF8.self)
                )
            }
            if byte < 0x20 { throw failure("a control character must be escaped in a string") }
            if byte == UInt8(ascii: "\\") {
                if decoded == nil { decoded = Array(bytes[start..<position]) }
                try escape(into: &decoded!)
                continue
            }
            decoded?.append(byte)
            position += 1
        }
    }

    mutating func escape(into output: inout [UInt8]) throws(PayloadError) {
        position += 1
        guard position < bytes.count else { throw failure("unterminated escape") }
        let byte = bytes[position]
        position += 1
        switch byte {
        case UInt8(ascii: "\""): output.append(0x22)
        case UInt8(ascii: "\\"): output.append(0x5C)
        case UInt8(ascii: "/"): output.append(0x2F)
        case UInt8(ascii: "b"): output.append(0x08)
        case UInt8(ascii: "f"): output.append(0x0C)
        case UInt8(ascii: "n"): output.append(0x0A)
        case UInt8(ascii: "r"): output.append(0x0D)
        case UInt8(ascii: "t"): output.append(0x09)
        case UInt8(ascii: "u"):
            let first = try hex4()
            var scalar: Unicode.Scalar?
            if (0xD800...0xDBFF).contains(first), position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                bytes[position + 1] == UInt8(ascii: "u")
            {
                let save = position
                position += 2
                let second = try hex4()
                if (0xDC00...0xDFFF).contains(second) {
                    scalar = Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
                } else {
                    position = save
                }
            } else {
                scalar = Unicode.Scalar(first)
            }
            // A lone surrogate decodes to U+FFFD; the string's literal keeps what was written.
            output.append(contentsOf: Array(String(scalar ?? "\u{FFFD}").utf8))
        default:
            position -= 1
            throw failure("invalid escape")
        }
    }

    mutating func hex4() throws(PayloadError) -> UInt32 {
        guard position + 4 <= bytes.count else { throw failure("unterminated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw failure("invalid \\u escape")
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }
}
