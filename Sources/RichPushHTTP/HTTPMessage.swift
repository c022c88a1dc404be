import CMicroHTTPD
import RichPushCore
import Synchronization

/// A request as the server hands it to its handler: what libmicrohttpd parsed, and the body once read.
///
/// What the head gave is held in one object of its own, so that a copy of the request (the handler's, the task's,
/// the completion's) retains that one object rather than each string and dictionary: the copies showed in
/// `GET /healthz`'s profile (docs/performance.md, issue 26 round thirteen).
package struct HTTPRequest: Sendable {
    /// The method (`GET`, `POST`, ...).
    package var method: String { parsed.method }
    /// The path, percent-decoded by libmicrohttpd, without the query.
    package var path: String { parsed.path }
    /// Header values by lowercased name. A header that must appear once (`RequestHead.isSingleton`: Authorization,
    /// Content-Length, Content-Type, Host, Transfer-Encoding, X-Request-Id) never repeats here, as the server
    /// refuses such a request with 400; of any other, the last value.
    package var headers: HTTPHeaders { parsed.headers }
    /// Query arguments by name, decoded.
    package var query: [String: String] { parsed.query }
    /// When the request began: its request line was in (the server's clock, read once for the request).
    package var started: ContinuousClock.Instant { parsed.started }
    /// A number no other request of this process has: a handler matches `respond(to:)` and `completed` to the
    /// `head` it answered by it (one relaxed atomic increment per request).
    package var number: UInt64 { parsed.number }
    /// The body, complete (empty until read).
    package var body: [UInt8] = []
    /// What the handler's `head` gave with `HTTPHead.read` (its `context`), from then on; nil before, and for a
    /// request `head` answered itself.
    package var context: (any Sendable)? = nil

    private let parsed: Parsed

    private final class Parsed: Sendable {
        let method: String
        let path: String
        let headers: HTTPHeaders
        let query: [String: String]
        let started: ContinuousClock.Instant
        let number = HTTPRequest.numbers.wrappingAdd(1, ordering: .relaxed).newValue

        init(
            method: String, path: String, headers: HTTPHeaders, query: [String: String],
            started: ContinuousClock.Instant
        ) {
            self.method = method
            self.path = path
            self.headers = headers
            self.query = query
            self.started = started
        }
    }

    private static let numbers = Atomic<UInt64>(0)

    package init(
        method: String, path: String, headers: HTTPHeaders, query: [String: String],
        started: ContinuousClock.Instant = .now
    ) {
        parsed = Parsed(method: method, path: path, headers: headers, query: query, started: started)
    }

    /// Whether the body's media type is `type` (given in lowercase, as `application/x-ndjson`): compared without
    /// regard to case, without parameters (`application/json; charset=utf-8` is `application/json`) and without
    /// the spaces around it. Compared on the bytes, with no string made: it runs for every request.
    package func hasMediaType(_ type: String) -> Bool {
        guard var value = headers["content-type"] else { return false }
        return value.withUTF8 { bytes in
            let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
            var start = 0
            var end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.count
            while start < end, isSpace(bytes[start]) { start += 1 }
            while end > start, isSpace(bytes[end - 1]) { end -= 1 }
            guard end - start == type.utf8.count else { return false }
            return zip(bytes[start..<end], type.utf8).allSatisfy { byte, expected in
                ((0x41...0x5A).contains(byte) ? byte | 0x20 : byte) == expected
            }
        }
    }
}

/// A request's header fields, by lowercased name, in the order they came: a name given more than once answers its
/// last value. The fields are bytes in one buffer, each a name's length and a value's (4 bytes each, little-endian),
/// then the name and the value, searched from the start when a name is asked for: a request has a handful of fields,
/// of which the server and the service ask for a few, and a dictionary of strings cost an allocation and a hash of
/// each name added and asked for, and a string for each value of over 15 bytes, made and destroyed with the request
/// (in `GET /healthz`'s profile, issue 26 round thirteen).
package struct HTTPHeaders: Sendable, ExpressibleByDictionaryLiteral {
    private var bytes: [UInt8] = []

    package init() {}

    /// Room for `bytes` of names and values, of the head the fields come from.
    init(reservingCapacity capacity: Int) {
        bytes.reserveCapacity(capacity)
    }

    package init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { append(name: name, value: value) }
    }

    /// The last value given for `name` (lowercase), or nil.
    package subscript(name: String) -> String? {
        bytes.withUnsafeBytes { buffer in
            lastValue(of: name, in: buffer).map { String(decoding: buffer[$0], as: UTF8.self) }
        }
    }

    /// Whether a field named `name` (lowercase) was given, without making its value a string.
    package func contains(_ name: String) -> Bool {
        bytes.withUnsafeBytes { lastValue(of: name, in: $0) != nil }
    }

    /// How many fields there are, a name given twice counted twice.
    package var count: Int {
        bytes.withUnsafeBytes { buffer in
            var count = 0
            Self.forEachField(in: buffer) { _, _ in count += 1 }
            return count
        }
    }

    /// Adds a field (its name in lowercase).
    package mutating func append(name: String, value: String) {
        var value = value
        value.withUTF8 { append(name: name, value: UnsafeRawBufferPointer($0)) }
    }

    /// Adds a field (its name in lowercase), its value's bytes copied as they are.
    package mutating func append(name: String, value: UnsafeRawBufferPointer) {
        let nameBytes = name.utf8
        Self.appendLength(nameBytes.count, to: &bytes)
        Self.appendLength(value.count, to: &bytes)
        bytes.append(contentsOf: nameBytes)
        bytes.append(contentsOf: value)
    }

    /// Where the last value given for `name` lies in `buffer` (the fields' bytes), or nil.
    private func lastValue(of name: String, in buffer: UnsafeRawBufferPointer) -> Range<Int>? {
        var name = name
        return name.withUTF8 { wanted in
            var found: Range<Int>?
            Self.forEachField(in: buffer) { name, value in
                if name.count == wanted.count, buffer[name].elementsEqual(wanted) { found = value }
            }
            return found
        }
    }

    /// Calls `body` with where each field's name and value lie in `buffer`, in order.
    private static func forEachField(in buffer: UnsafeRawBufferPointer, _ body: (Range<Int>, Range<Int>) -> Void) {
        var offset = 0
        while offset < buffer.count {
            let nameStart = offset + 8
            let valueStart = nameStart + Int(length(buffer, at: offset))
            offset = valueStart + Int(length(buffer, at: offset + 4))
            body(nameStart..<valueStart, valueStart..<offset)
        }
    }

    private static func length(_ buffer: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    private static func appendLength(_ length: Int, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: UInt32(truncatingIfNeeded: length).littleEndian) { bytes.append(contentsOf: $0) }
    }
}

/// A response: status, headers and a body of bytes, an open file, or a stream written as it is produced.
package struct HTTPResponse: Sendable {
    package enum Body: Sendable {
        case bytes([UInt8])
        /// An open descriptor, read from its start; the server owns (and closes) it from then on.
        case file(descriptor: Int32, size: Int)
        /// Sent chunked, as the stream is written.
        case stream(ResponseStream)
    }

    // A change to the status, the headers or the body drops the prepared response: what is sent is always what
    // these say.
    package var status: Int { didSet { premade = nil } }
    package var headers: [(String, String)] { didSet { premade = nil } }
    package var body: Body { didSet { premade = nil } }
    /// What the access log says of it besides its status: the request id, the payload's outcome, the tenant.
    package var log = Log()
    /// libmicrohttpd's response for this one, made once by `prepared()` and queued on every connection that sends
    /// it; nil for a response made for one request.
    private(set) var premade: PreparedResponse?

    package struct Log: Sendable {
        package var requestID: String? = nil
        package var outcome: String? = nil
        /// The name of the tenant whose token selected this response's request (`serve --tenants`), when the
        /// handler answered from the head.
        package var tenant: String? = nil
        /// Set by the server, never by a handler: why the request ended before its response was sent whole
        /// (`HTTPServer.incompleteReason`), nil when it was. A status says what was queued, not what arrived: a
        /// streamed body cut off, or a client gone while its response was sent, still has the status queued.
        package var incomplete: String? = nil
        package init() {}
    }

    package init(status: Int, headers: [(String, String)] = [], body: Body = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The same response, with libmicrohttpd's response made now, once, and queued as it is on every connection
    /// that sends it: for a response made once and sent many times (`/healthz`'s, a 413 of the service's). Making
    /// it for each request (a `malloc` of the response and of each header's name and value, a mutex initialised and
    /// destroyed) showed in `GET /healthz`'s profile. A body of bytes only: any other is returned as it is.
    package func prepared() -> HTTPResponse {
        guard case .bytes(let bytes) = body else { return self }
        var response = self
        response.premade = PreparedResponse(headers: headers, bytes: bytes)
        return response
    }

    /// As `prepared()`, and the body's bytes let go of once libmicrohttpd's copy holds them (the response then sends
    /// that copy alone): for a large body made once and sent many times, `/metrics` under many tenants, kept once
    /// rather than twice. When libmicrohttpd could not make it, the response as it is, made for each request.
    package func preparedAlone() -> HTTPResponse {
        var response = prepared()
        guard let premade = response.premade, premade.pointer != nil else { return self }
        response.body = .bytes([])
        response.premade = premade
        return response
    }

    /// Which libmicrohttpd response made once this one sends, if any: equal for responses that share it (tests).
    package var preparedIdentity: ObjectIdentifier? { premade.map(ObjectIdentifier.init) }

    /// A JSON body (the bytes given), with its Content-Type.
    package static func json(_ status: Int, _ bytes: [UInt8], headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: .bytes(bytes))
    }

    /// An error: `{"code": code, "detail": detail}`, the code one of `EnrichmentProblem.Code.known(in: .http)`.
    package static func error(
        _ status: Int, _ code: EnrichmentProblem.Code, _ detail: String, headers: [(String, String)] = []
    ) -> HTTPResponse {
        assert(code.domains.contains(.http), "\(code) is not a code of an HTTP error")
        let body = JSONObject([("code", .text(code.rawValue)), ("detail", .text(detail))])
        return json(status, JSONWriter.bytes(.object(body)) + [0x0A], headers: headers)
    }
}

/// A libmicrohttpd response made once and queued on many connections (`HTTPResponse.prepared()`); destroyed when the
/// last `HTTPResponse` holding it goes. libmicrohttpd counts a response's references under the response's own lock,
/// so connections of any daemon's thread may queue it at once; each connection drops its reference when it is done.
final class PreparedResponse: @unchecked Sendable {
    /// Nil when libmicrohttpd could not make it (out of memory): the response is then made per request.
    let pointer: OpaquePointer?

    init(headers: [(String, String)], bytes: [UInt8]) {
        pointer = Self.response(copying: bytes)
        if let pointer {
            for (name, value) in headers { MHD_add_response_header(pointer, name, value) }
        }
    }

    deinit {
        if let pointer { MHD_destroy_response(pointer) }
    }

    /// A libmicrohttpd response whose body is a copy of `bytes`, without headers; nil when it cannot be made.
    static func response(copying bytes: [UInt8]) -> OpaquePointer? {
        bytes.withUnsafeBytes { buffer in
            MHD_create_response_from_buffer(
                buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress), cmhd_must_copy)
        }
    }
}
