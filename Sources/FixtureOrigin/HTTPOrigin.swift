import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A small HTTP/1.1 origin on a loopback address, for tests and the demo: one thread accepts, one thread per
/// connection answers, keep-alive supported. Its responses can misbehave on purpose (drip, stall, lie about
/// their length), which is what a fetcher must be tested against.
///
/// Every wait in it is bounded, and `stop()` ends every connection thread within one poll interval.
public final class HTTPOrigin: Sendable {
    /// An HTTP request as received.
    public struct Request: Sendable {
        /// `GET`, `HEAD`, ...
        public var method: String
        /// The path, without the query.
        public var path: String
        /// The query parameters, decoded.
        public var query: [String: String]
        /// Header fields, names lowercased.
        public var headers: [String: String]

        /// The path with its query, parameters sorted by name (as in `requestLog`).
        public var target: String {
            guard !query.isEmpty else { return path }
            return path + "?" + query.keys.sorted().map { "\($0)=\(query[$0]!)" }.joined(separator: "&")
        }
    }

    /// How a response body is sent.
    public enum Body: Sendable {
        /// These bytes, with a correct Content-Length unless `Response.declaredLength` says otherwise.
        case bytes([UInt8])
        /// These bytes, one `chunkSize` piece every `interval`.
        case drip([UInt8], chunkSize: Int, interval: Duration)
        /// `prefix`, then zeros until `total` bytes have been sent (for size caps without storing large files).
        case generated(prefix: [UInt8], total: Int)
        /// Headers, then nothing: the connection is held open until the client leaves or the origin stops.
        case stall
        /// Nothing at all, not even a status line: the request is read and never answered.
        case silence
        /// The request is read, then the connection is closed with no answer: with `reset`, abortively (an RST,
        /// by SO_LINGER 0), else with a FIN (curl: "Empty reply from server").
        case drop(reset: Bool)
        /// The request is read, then these bytes are sent as they are, with no status line or header fields of
        /// the origin's, and the connection is closed: an answer that is not HTTP (curl takes it for HTTP/0.9).
        case raw([UInt8])
    }

    /// One request as the origin received it, and the status it answered: what a test asserts on when the
    /// point is what went over the wire (a conditional request, a header that must not be sent).
    public struct Exchange: Sendable {
        /// `GET`, `HEAD`, ...
        public var method: String
        /// The path with its query, as in `requestLog`.
        public var target: String
        /// Header fields, names lowercased.
        public var headers: [String: String]
        /// The status answered; nil when the route answers no status (`Body.silence`, `.drop`, `.raw`).
        public var status: Int?
        /// The header fields answered, names lowercased (Content-Length and Connection, added when sending, are
        /// not among them).
        public var responseHeaders: [String: String]
        /// When the request had been read.
        public var received: ContinuousClock.Instant
    }

    /// A response.
    public struct Response: Sendable {
        /// The status code.
        public var status: Int
        /// Header fields, in order. Content-Length is added unless the body has no declared length.
        public var headers: [(String, String)]
        /// The body.
        public var body: Body
        /// Overrides the Content-Length sent: a number to lie, or nil to send the true length. With
        /// `omitLength`, none is sent and the connection closes after the body.
        public var declaredLength: Int?
        /// Send no Content-Length and close the connection to end the body.
        public var omitLength: Bool
        /// Bytes sent after the body, beyond its Content-Length, on a connection kept open for the next request (a
        /// body longer than it says, as a lying origin sends it).
        public var excess: [UInt8]
        /// Bytes sent on this connection only once its next request has been read, before that request's response:
        /// excess that comes late, after a client's look at the reused connection found nothing waiting.
        public var lateExcess: [UInt8]

        /// A response.
        public init(
            status: Int = 200, headers: [(String, String)] = [], body: Body = .bytes([]), declaredLength: Int? = nil,
            omitLength: Bool = false, excess: [UInt8] = [], lateExcess: [UInt8] = []
        ) {
            self.status = status
            self.headers = headers
            self.body = body
            self.declaredLength = declaredLength
            self.omitLength = omitLength
            self.excess = excess
            self.lateExcess = lateExcess
        }
    }

    /// The port the origin listens on.
    public let port: Int
    /// The address it listens on.
    public let host: String
    private let listener: Int32
    private let handler: @Sendable (Request) -> Response
    // NSLock (a pthread mutex) rather than Synchronization.Mutex, so that ThreadSanitizer sees the locking.
    private let lock = NSLock()
    nonisolated(unsafe) private var stateStorage = State()
    private let acceptDone = DispatchSemaphore(value: 0)

    private struct State {
        var stopped = false
        var connections = 0
        var exchanges: [Exchange] = []
        /// Connections accepted and not yet ended, and the most there were at once.
        var open = 0
        var mostOpen = 0
    }

    /// Starts an origin on `host` (an IPv4 loopback address) and `port` (0: any free port).
    public init(host: String = "127.0.0.1", port: Int = 0, handler: @escaping @Sendable (Request) -> Response) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw OriginError("socket", errno) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(fd)
            throw OriginError("inet_pton \(host)", EINVAL)
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 512) == 0 else {
            let code = errno
            close(fd)
            throw OriginError("bind/listen \(host):\(port)", code)
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: actual.sin_port))
        self.host = host
        self.listener = fd
        self.handler = handler
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "origin-accept"
        thread.start()
    }

    deinit { stop() }

    /// The URL of `path` on this origin, by address (`http://127.0.0.1:PORT/path`).
    public func url(_ path: String) -> String { "http://\(host):\(port)\(path)" }

    /// How many TCP connections have been accepted so far.
    public var connectionCount: Int { withState { $0.connections } }

    /// The most TCP connections that were open at once so far (a connection counts from its accept until the
    /// origin has seen it end).
    public var mostConnectionsAtOnce: Int { withState { $0.mostOpen } }

    /// The paths requested so far, in order (with their query).
    public var requestLog: [String] { exchanges.map(\.target) }

    /// Every request so far, in order, with its headers and the status answered.
    public var exchanges: [Exchange] { withState { $0.exchanges } }

    /// Stops accepting and ends every connection. Idempotent.
    public func stop() {
        let first = withState { state in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        acceptDone.wait()
        close(listener)
    }

    private func withState<T>(_ body: (inout State) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&stateStorage)
    }

    private var isStopped: Bool { withState { $0.stopped } }

    private func acceptLoop() {
        defer { acceptDone.signal() }
        while !isStopped {
            var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            withState { state in
                state.connections += 1
                state.open += 1
                state.mostOpen = max(state.mostOpen, state.open)
            }
            var yes: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
            let thread = Thread { [self] in serve(client) }
            thread.stackSize = 256 * 1024
            thread.start()
        }
    }

    // MARK: - One connection

    private func serve(_ fd: Int32) {
        defer {
            close(fd)
            withState { $0.open -= 1 }
        }
        var buffer: [UInt8] = []
        // The previous response's late excess, sent before the next response.
        var late: [UInt8] = []
        // Keep-alive: answer requests on this connection until the client closes, asks to close, or we stop.
        for _ in 0..<10_000 {
            guard let (request, rest) = readRequest(fd, buffer: buffer) else { return }
            buffer = rest
            let received = ContinuousClock.now
            let response = handler(request)
            let silent: Bool
            switch response.body {
            case .silence, .drop, .raw: silent = true
            default: silent = false
            }
            let exchange = Exchange(
                method: request.method, target: request.target,
                headers: request.headers, status: silent ? nil : response.status,
                responseHeaders: silent
                    ? [:]
                    : Dictionary(
                        response.headers.map { ($0.0.lowercased(), $0.1) }, uniquingKeysWith: { first, _ in first }),
                received: received)
            withState { $0.exchanges.append(exchange) }
            if !late.isEmpty, !write(fd, late) { return }
            late = response.lateExcess
            guard send(response, to: fd, method: request.method) else { return }
            if request.headers["connection"]?.lowercased() == "close" { return }
        }
    }

    /// Reads one request head; nil when the client closed, the origin stopped, or 30 s passed in silence.
    private func readRequest(_ fd: Int32, buffer: [UInt8]) -> (Request, [UInt8])? {
        var data = buffer
        let terminator: [UInt8] = [13, 10, 13, 10]
        var waited = 0
        while true {
            if let end = Self.find(terminator, in: data) {
                let head = String(decoding: data[..<end], as: UTF8.self)
                let rest = Array(data[(end + 4)...])
                return Self.parse(head).map { ($0, rest) }
            }
            guard data.count < 64 * 1024, waited < 30_000, !isStopped else { return nil }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) >= 0 else { return nil }
            guard poller.revents != 0 else {
                waited += 100
                continue
            }
            var chunk = [UInt8](repeating: 0, count: 8192)
            let count = recv(fd, &chunk, chunk.count, 0)
            guard count > 0 else { return nil }
            data += chunk[..<count]
        }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for index in 0...(haystack.count - needle.count)
        where haystack[index..<(index + needle.count)].elementsEqual(needle) {
            return index
        }
        return nil
    }

    private static func parse(_ head: String) -> Request? {
        let lines = head.components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count >= 2 else { return nil }
        let target = String(parts[1])
        let pieces = target.split(separator: "?", maxSplits: 1)
        var query: [String: String] = [:]
        if pieces.count == 2 {
            for pair in pieces[1].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1)
                let key = String(kv[0]).removingPercentEncoding ?? String(kv[0])
                let value = kv.count == 2 ? (String(kv[1]).removingPercentEncoding ?? String(kv[1])) : ""
                query[key] = value
            }
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        return Request(method: String(parts[0]), path: String(pieces[0]), query: query, headers: headers)
    }

    /// Sends a response; false when the connection must close afterwards.
    private func send(_ response: Response, to fd: Int32, method: String) -> Bool {
        if case .silence = response.body {
            while !isStopped, peerIsOpen(fd) { usleep(50_000) }
            return false
        }
        if case .raw(let bytes) = response.body {
            _ = write(fd, bytes)
            return false
        }
        if case .drop(let reset) = response.body {
            if reset {
                var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            }
            return false
        }
        var trueLength: Int? = nil
        switch response.body {
        case .bytes(let bytes): trueLength = bytes.count
        case .drip(let bytes, _, _): trueLength = bytes.count
        case .generated(_, let total): trueLength = total
        case .stall, .silence, .drop, .raw: trueLength = nil
        }
        var head = "HTTP/1.1 \(response.status) \(Self.reason(response.status))\r\n"
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        let closes = response.omitLength || trueLength == nil || response.declaredLength != nil
        if !response.omitLength, let length = response.declaredLength ?? trueLength {
            head += "Content-Length: \(length)\r\n"
        }
        if closes { head += "Connection: close\r\n" }
        head += "\r\n"
        guard write(fd, Array(head.utf8)) else { return false }
        if method == "HEAD" { return !closes }
        switch response.body {
        case .bytes(let bytes):
            guard write(fd, bytes) else { return false }
        case .drip(let bytes, let chunkSize, let interval):
            var offset = 0
            while offset < bytes.count, !isStopped {
                let end = min(offset + chunkSize, bytes.count)
                guard write(fd, Array(bytes[offset..<end])) else { return false }
                offset = end
                if offset < bytes.count { sleep(for: interval) }
            }
        case .generated(let prefix, let total):
            guard write(fd, Array(prefix.prefix(total))) else { return false }
            var sent = min(prefix.count, total)
            let zeros = [UInt8](repeating: 0, count: 64 * 1024)
            while sent < total, !isStopped {
                let count = min(zeros.count, total - sent)
                guard write(fd, Array(zeros[..<count])) else { return false }
                sent += count
            }
        case .stall:
            while !isStopped, peerIsOpen(fd) { usleep(50_000) }
            return false
        case .silence, .drop, .raw:
            return false
        }
        if !response.excess.isEmpty, !write(fd, response.excess) { return false }
        return !closes
    }

    private func sleep(for duration: Duration) {
        let (seconds, attoseconds) = duration.components
        usleep(UInt32(seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
    }

    private func peerIsOpen(_ fd: Int32) -> Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 0) > 0 else { return true }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT)) > 0
    }

    private func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return false }
            offset += count
        }
        return true
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 304: return "Not Modified"
        case 404: return "Not Found"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return "Status"
        }
    }
}
