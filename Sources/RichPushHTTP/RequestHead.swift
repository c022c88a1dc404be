/// What the server finds in a request's head, and the refusal it earns, before any handler sees the request:
/// the documented limits on the head's size and fields, and the framing rules every hop must read alike
/// (RFC 9112). A request that a proxy in front could frame differently from us (two lengths, a length and a
/// coding, a NUL byte that ends a field early for one reader and not another) is refused, and its connection
/// closed, so that no byte after it is read as another request.
package struct RequestHead: Sendable {
    /// The limits on a head; the defaults are documented in docs/service.md ("Running the service").
    package struct Limits: Sendable {
        /// The request line and headers, in bytes. Default 16 KiB: a gateway's heads carry a few hundred bytes.
        package var bytes = 16 * 1024
        /// Header fields. Default 100 (Apache's `LimitRequestFields`): a gateway sends about ten; libmicrohttpd
        /// keeps a record of each in the connection's memory, which is sized for this many.
        package var headerFields = 100
        /// Query arguments. Default 100: the service reads one (`deadline`); records as for header fields.
        package var queryArguments = 100

        package init() {}
    }

    /// The request line and headers as received, in bytes.
    package var bytes = 0
    /// The request target.
    package var target = RequestTarget()
    /// The number of header fields.
    package var headerFields = 0
    /// Whether some bytes of the head belong to no field as parsed: a NUL byte inside a field (libmicrohttpd's
    /// fields end at it), or a line folded onto the next (obsolete since RFC 7230).
    package var unaccounted = false
    /// The first header name that is not a token (whitespace before the colon, say), as received.
    package var invalidName: String? = nil
    /// The first header (lowercased) whose value holds a control character (a lone CR, say; a tab is allowed).
    package var invalidValue: String? = nil
    /// The first header that must appear once and came more than once (lowercased).
    package var repeated: String? = nil
    /// The Content-Length and Transfer-Encoding fields' values, if present.
    package var contentLength: String? = nil
    package var transferEncoding: String? = nil
    /// The Expect field's value, if present.
    package var expect: String? = nil
    /// Whether the request line's version is HTTP/1.0.
    package var http10 = false
    /// Whether the request came without a Host field.
    package var missingHost = false

    package init() {}

    /// Whether `name` (lowercase) is a header field that must appear at most once: the framing ones, and those the
    /// service reads as one value (a proxy may keep the first where we would keep the last). Compared without
    /// hashing the name, as it runs for every field.
    package static func isSingleton(_ name: String) -> Bool {
        switch name {
        case "authorization", "content-length", "transfer-encoding", "content-type", "host", "x-request-id", "expect":
            true
        default: false
        }
    }

    /// Why the request is refused, as the response that says so, or nil when it may go on.
    package func refusal(_ limits: Limits) -> HTTPResponse? {
        if target.encodedNUL { return .error(400, .badRequest, "the request target holds an encoded NUL byte (%00)") }
        if target.invalidByte {
            return .error(400, .badRequest, "the request target holds a space or a control character")
        }
        if unaccounted {
            return .error(400, .badRequest, "the request's head holds a NUL byte or a header folded over lines")
        }
        if target.bytes > limits.bytes {
            return .error(414, .targetTooLong, "the request target is longer than \(limits.bytes) bytes")
        }
        if target.arguments > limits.queryArguments {
            return .error(414, .targetTooLong, "the query has more than \(limits.queryArguments) arguments")
        }
        if bytes > limits.bytes {
            return .error(431, .headersTooLarge, "the request line and headers are larger than \(limits.bytes) bytes")
        }
        if headerFields > limits.headerFields {
            return .error(431, .headersTooLarge, "the request has more than \(limits.headerFields) header fields")
        }
        if let invalidName { return .error(400, .badRequest, "'\(invalidName)' is not a header name") }
        if let invalidValue {
            return .error(400, .badRequest, "the value of \(invalidValue) holds a control character")
        }
        if let repeated { return .error(400, .badRequest, "\(repeated) appears more than once") }
        // RFC 9112 §3.2: a server must answer 400 to an HTTP/1.1 request without Host (a proxy in front may route
        // by it).
        if !http10, missingHost { return .error(400, .badRequest, "an HTTP/1.1 request needs a Host field") }
        if let contentLength, declaredLength == nil {
            return .error(400, .badRequest, "Content-Length '\(contentLength)' is not a decimal length")
        }
        if let coding = transferEncoding {
            // RFC 9112, 6.1: an HTTP/1.0 hop knows no Transfer-Encoding, so a proxy in front may read no body where
            // libmicrohttpd reads a chunked one (and the chunks as the next request).
            if http10 {
                return .error(400, .badRequest, "Transfer-Encoding is not HTTP/1.0: its body cannot be framed")
            }
            if contentLength != nil {
                return .error(400, .badRequest, "both Content-Length and Transfer-Encoding are given")
            }
            // libmicrohttpd reads a chunked body only when the whole value is `chunked`; with any other value it
            // would wait for a body it cannot delimit.
            guard Self.equalIgnoringCase(coding, "chunked") else {
                return .error(
                    501, .unsupportedTransferCoding, "Transfer-Encoding '\(coding)' is not supported; only chunked is")
            }
        }
        // RFC 9110 §10.1.1: 100-continue is the one expectation defined. libmicrohttpd sends its 100 only for that
        // value, so a client expecting anything else (`100-continuex`) waited for a 100 that never came while the
        // server waited for the body, each until a timeout; 417 says so at once.
        if let expect, !Self.equalIgnoringCase(expect, "100-continue") {
            return .error(417, .expectationFailed, "Expect '\(expect)' is not supported; only 100-continue is")
        }
        return nil
    }

    /// The body's declared length (Content-Length); nil when there is none, or it is not decimal (which `refusal`
    /// refuses). A length past `Int.max` is `Int.max`, over every limit, so it is refused as too large before a byte
    /// of the body is read, as any other: libmicrohttpd takes any length that fits 64 unsigned bits, and one of 2^63
    /// or more, read as no declared length, let a client hold its request (and a slot of `--max-in-flight`) with a
    /// byte every few seconds, outside the bound on the body's rate.
    package var declaredLength: Int? {
        guard let contentLength, !contentLength.isEmpty else { return nil }
        var length = 0
        for byte in contentLength.utf8 {
            guard (0x30...0x39).contains(byte) else { return nil }
            let (tens, overflowed) = length.multipliedReportingOverflow(by: 10)
            let (sum, carried) = tens.addingReportingOverflow(Int(byte - 0x30))
            if overflowed || carried { return Int.max }
            length = sum
        }
        return length
    }

    /// Whether a field value holds a control character: anything below a space but a tab, or DEL (RFC 9110 §5.5).
    package static func hasControl<Bytes: Collection<UInt8>>(_ value: Bytes) -> Bool {
        value.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
    }

    /// Whether `name` is an HTTP token (RFC 9110 §5.6.2), as a field name must be.
    package static func isToken<Bytes: Collection<UInt8>>(_ name: Bytes) -> Bool {
        !name.isEmpty && name.allSatisfy(isTokenByte)
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    private static func equalIgnoringCase(_ value: String, _ lowercase: String) -> Bool {
        value.utf8.count == lowercase.utf8.count
            && zip(value.utf8, lowercase.utf8).allSatisfy { ((0x41...0x5A).contains($0) ? $0 | 0x20 : $0) == $1 }
    }
}

/// A request target as received, before its query is split and its escapes decoded.
package struct RequestTarget: Sendable {
    /// Its length in bytes.
    package var bytes = 0
    /// The offset of the `?` that starts its query, if any.
    package var query: Int? = nil
    /// How many arguments its query has at most: one more than its `&`s (0 for an empty query, or none).
    package var arguments = 0
    /// Whether a `%00` escape would decode to a NUL byte, which ends the path or argument it is in.
    package var encodedNUL = false
    /// Whether it holds a space or a control character, which a target never does (RFC 9112 §3.2).
    package var invalidByte = false

    package init() {}

    /// Scans the target's bytes once.
    package init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes.count
        var ampersands = 0
        var index = 0
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "?") where query == nil: query = index
            case UInt8(ascii: "&") where query != nil: ampersands += 1
            case UInt8(ascii: "%")
            where index + 2 < bytes.count && bytes[index + 1] == 0x30 && bytes[index + 2] == 0x30:
                encodedNUL = true
            case 0...0x20, 0x7F: invalidByte = true
            default: break
            }
            index += 1
        }
        if let query, query + 1 < bytes.count { arguments = ampersands + 1 }
    }
}
