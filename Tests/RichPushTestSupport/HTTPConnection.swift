import Foundation

/// A server test's failure: what was expected and what came instead.
package struct ServeFailure: Error, CustomStringConvertible {
    package let detail: String
    package init(_ detail: String) { self.detail = detail }
    package var description: String { detail }
}

/// A response as read off the wire.
package struct HTTPReply: Sendable {
    package var status: Int
    /// Lowercased names.
    package var headers: [String: String]
    package var body: [UInt8]
    package var chunked: Bool { headers["transfer-encoding"]?.lowercased() == "chunked" }
    package var text: String { String(decoding: body, as: UTF8.self) }
    package var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]) ?? [:] }
    /// The body's lines, each parsed as JSON.
    package var lines: [[String: Any]] {
        text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }
}

/// A blocking HTTP/1.1 client connection on loopback, speaking exactly the bytes a test gives it (no path
/// normalization): for the server's tests. Every read is bounded by the caller's limit.
package final class HTTPConnection: @unchecked Sendable {
    package private(set) var descriptor: Int32
    private var buffer: [UInt8] = []

    /// Connects to `port` on 127.0.0.1 from `source` (another loopback address makes another client); with
    /// `receiveBuffer`, the socket's receive buffer is that small (set before connecting, so the window the server
    /// sees is small too): for a client that does not read.
    package init(port: Int, from source: String = "127.0.0.1", receiveBuffer: Int? = nil) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer.map(Int32.init) {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = withSocketAddress(source, port: 0) { bind(descriptor, $0, $1) }
        guard bound == 0 else {
            let reason = String(cString: strerror(errno))
            disconnect()
            throw ServeFailure("bind to \(source): \(reason)")
        }
        let connected = withSocketAddress("127.0.0.1", port: port) { connect(descriptor, $0, $1) }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            // Through disconnect(), which marks the descriptor closed: a class whose initializer throws once every
            // property is set is deinitialized, and deinit's disconnect() closed the number a second time (by then
            // another thread's new descriptor: the test process lost a pipe or a server's socket).
            disconnect()
            throw ServeFailure("connect to port \(port): \(reason)")
        }
    }

    deinit { disconnect() }

    /// Closes the connection now (once; what the server sent and was not read makes it a reset).
    package func disconnect() {
        guard descriptor >= 0 else { return }
        close(descriptor)
        descriptor = -1
    }

    /// Ends the sending side (a FIN); the connection still reads.
    package func finishSending() {
        guard descriptor >= 0 else { return }
        shutdown(descriptor, Int32(SHUT_WR))
    }

    package func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes {
                Foundation.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { throw ServeFailure("send: \(String(cString: strerror(errno)))") }
            offset += count
        }
    }

    /// Sends a request (with Content-Length when there is a body) and reads its response.
    package func exchange(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
        within limit: Duration = .seconds(30)
    ) throws -> HTTPReply {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        try send(Array((head + "\r\n").utf8) + (body ?? []))
        return try readResponse(within: limit)
    }

    /// Reads one response: by Content-Length, chunked, or to the connection's end.
    package func readResponse(within limit: Duration) throws -> HTTPReply {
        let end = ContinuousClock.now + limit
        let headEnd = try readUntil(Array("\r\n\r\n".utf8), before: end)
        let head = String(decoding: buffer[..<headEnd], as: UTF8.self)
        buffer.removeSubrange(..<(headEnd + 4))
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw ServeFailure("bad status line: \(head)")
        }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        var reply = HTTPReply(status: status, headers: headers, body: [])
        if let length = headers["content-length"].flatMap({ Int($0) }) {
            try fill(length, before: end)
            reply.body = Array(buffer[..<length])
            buffer.removeSubrange(..<length)
        } else if reply.chunked {
            while true {
                let lineEnd = try readUntil(Array("\r\n".utf8), before: end)
                let size = Int(String(decoding: buffer[..<lineEnd], as: UTF8.self), radix: 16) ?? 0
                buffer.removeSubrange(..<(lineEnd + 2))
                try fill(size + 2, before: end)
                reply.body += buffer[..<size]
                buffer.removeSubrange(..<(size + 2))
                if size == 0 { break }
            }
        } else if Self.hasBody(status) {
            while try readMore(before: end) {}
            reply.body = buffer
            buffer = []
        }
        return reply
    }

    private static func hasBody(_ status: Int) -> Bool { status != 204 && status != 304 }

    /// Whether the peer has closed the connection (waiting up to `limit` for the close or a byte).
    package func isClosed(within limit: Duration) throws -> Bool {
        let end = ContinuousClock.now + limit
        return try !readMore(before: end)
    }

    /// Reads what has arrived without waiting: whether the connection is still open (no end, no reset seen).
    /// What was read stays in the buffer, for `received`.
    package func stillOpen() -> Bool {
        while true {
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = recv(descriptor, &chunk, chunk.count, Int32(MSG_DONTWAIT))
            if count > 0 {
                buffer += chunk[..<count]
                continue
            }
            return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        }
    }

    /// The bytes read so far and not yet taken by a response.
    package var received: [UInt8] { buffer }

    /// Reads a response, or the connection's close first: nil then.
    package func responseOrClose(within limit: Duration) throws -> HTTPReply? {
        do {
            return try readResponse(within: limit)
        } catch let failure as ServeFailure where failure.description.hasPrefix("connection closed") {
            return nil
        }
    }

    private func readUntil(_ marker: [UInt8], before end: ContinuousClock.Instant) throws -> Int {
        while true {
            if let index = find(marker) { return index }
            guard try readMore(before: end) else { throw ServeFailure("connection closed before \(marker)") }
        }
    }

    private func find(_ marker: [UInt8]) -> Int? {
        guard buffer.count >= marker.count else { return nil }
        for index in 0...(buffer.count - marker.count) where Array(buffer[index..<(index + marker.count)]) == marker {
            return index
        }
        return nil
    }

    private func fill(_ count: Int, before end: ContinuousClock.Instant) throws {
        while buffer.count < count {
            guard try readMore(before: end) else {
                throw ServeFailure("connection closed with \(buffer.count) of \(count) bytes")
            }
        }
    }

    /// Reads what arrives; false at the connection's end. Throws when `end` passes first.
    private func readMore(before end: ContinuousClock.Instant) throws -> Bool {
        while true {
            let left = end - .now
            guard left > .zero else { throw ServeFailure("no response in time") }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(left.components.seconds * 1000 + 1, 200)))
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = recv(descriptor, &chunk, chunk.count, 0)
            if count < 0, errno == EINTR { continue }
            if count <= 0 { return false }
            buffer += chunk[..<count]
            return true
        }
    }
}
