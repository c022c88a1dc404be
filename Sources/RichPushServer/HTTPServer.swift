#if canImport(Glibc)
    import Glibc
#endif
import CMicroHTTPD
import RichPush

/// What the server asks of the code behind it.
package protocol HTTPHandler: Sendable {
    /// Called on the server's thread when a request's headers are in: answer at once (the body is not read),
    /// or have the body read first. Must not block.
    func head(_ request: HTTPRequest) -> HTTPHead
    /// Called with the request and its whole body; the server's thread is not held meanwhile (the connection is
    /// suspended, and resumed when the response is ready).
    func respond(to request: HTTPRequest) async -> HTTPResponse
    /// Called on the server's thread when a request is over: its response sent (`status` and `log` are the
    /// response's), or the connection lost first (status 0 when no response was queued).
    func completed(_ request: HTTPRequest, status: Int, log: HTTPResponse.Log, elapsed: Duration)
}

/// What to do with a request whose headers are in.
package enum HTTPHead: Sendable {
    /// Answer now; the body, if any, is not read (the connection is then closed after the response).
    case respond(HTTPResponse)
    /// Read the body, at most `limit` bytes, then call `respond(to:)`; a longer body gets `tooLarge`.
    case read(limit: Int, tooLarge: HTTPResponse)
}

/// Why a server could not start.
package struct HTTPServerError: Error, CustomStringConvertible {
    package let description: String
}

/// An HTTP/1.1 server on one listening address: libmicrohttpd with one internal thread (epoll), which parses
/// requests, reads bodies and writes responses; a request that needs time suspends its connection until its
/// response is ready, so a slow payload never holds the thread.
package final class HTTPServer: @unchecked Sendable {
    /// Bounds on what clients may hold. The defaults are documented in the README ("Running the service").
    package struct Limits: Sendable {
        /// The most connections open at once. Default 1,024: far beyond the work `--max-in-flight` admits, so
        /// idle keep-alive clients cannot crowd out working ones, and well within the process's descriptors.
        package var connections = 1024
        /// The most connections from one client address; 0 for no limit. Default 0: a gateway talks from few
        /// addresses, often one.
        package var connectionsPerAddress = 0
        /// A connection idle this long (no byte in or out, a response not waiting on work) is closed. Default
        /// 30 s: a keep-alive client reuses its connection within that; a slow-loris client is cut off.
        package var idleTimeoutSeconds = 30
        /// Memory per connection for the request line, headers and buffers. Default 16 KiB: a gateway's
        /// requests carry a few hundred bytes of headers; bodies are held apart, up to their own limit. It is
        /// not larger because libmicrohttpd clears the whole of it for every request (64 KiB cost 3% of the
        /// server's CPU in the service benchmark).
        package var connectionMemory = 16 * 1024

        package init() {}
    }

    // Touched by libmicrohttpd's thread, by `quiesce` and `stop`: the daemon pointer is set once in init.
    private let daemon: OpaquePointer
    private let handler: any HTTPHandler
    private let active = LockedValue(0)
    /// The port listened on (as bound, when 0 was asked for).
    package let port: Int

    /// Starts listening on `address` (`HOST:PORT`, an IPv6 host in brackets) and serving.
    package init(listening address: String, limits: Limits = Limits(), handler: any HTTPHandler) throws(HTTPServerError) {
        self.handler = handler
        guard let socketAddress = SocketAddress(address) else {
            throw HTTPServerError(description: "'\(address)' is not ADDRESS:PORT (an IPv6 address in brackets)")
        }
        // The callbacks' context is retained until the daemon is stopped (its thread joined) in deinit.
        var started: OpaquePointer? = nil
        let box = Unmanaged.passRetained(Box(handler: handler, active: active))
        socketAddress.withSockaddr { pointer, length in
            var settings = cmhd_settings(
                address: pointer, address_length: length, connection_limit: UInt32(limits.connections),
                per_address_limit: UInt32(limits.connectionsPerAddress),
                idle_timeout_seconds: UInt32(limits.idleTimeoutSeconds), connection_memory: limits.connectionMemory)
            started = cmhd_start(&settings, HTTPServer.access, box.toOpaque(), HTTPServer.finished, box.toOpaque())
        }
        guard let started else {
            box.release()
            throw HTTPServerError(description: "cannot listen on \(address): \(String(cString: strerror(errno)))")
        }
        daemon = started
        self.box = box
        port = Int(cmhd_bound_port(started))
    }

    private let box: Unmanaged<Box>

    deinit {
        MHD_stop_daemon(daemon)
        box.release()
    }

    /// Requests begun and not yet over (response not fully sent).
    package var requestsInProgress: Int { active.withLock { $0 } }

    /// Stops accepting connections (the listening socket is closed); connections already open are served.
    package func quiesce() {
        let listener = MHD_quiesce_daemon(daemon)
        if listener >= 0 { close(listener) }
    }

    // MARK: - libmicrohttpd's side

    /// What the callbacks need: the handler and the count of requests in progress.
    private final class Box {
        let handler: any HTTPHandler
        let active: LockedValue<Int>
        init(handler: any HTTPHandler, active: LockedValue<Int>) {
            self.handler = handler
            self.active = active
        }
    }

    /// One request, from its headers to its completion; touched on the server's thread only, but for the
    /// response set by the task that made it while the connection is suspended.
    ///
    /// `ready` needs no lock of its own: the task sets it and then calls `MHD_resume_connection`, and the server's
    /// thread reads it only after libmicrohttpd has taken the connection back from the resumed list; both steps go
    /// through libmicrohttpd's lock on that list (`cleanup_connection_mutex`), which orders the write before the
    /// read. A lock per request (a mutex and a condition allocated, initialised and destroyed) showed in the
    /// service's profile.
    private final class Exchange: @unchecked Sendable {
        var request: HTTPRequest
        let started = ContinuousClock.now
        let limit: Int
        let tooLarge: HTTPResponse?
        var overLimit = false
        var discarded = 0
        var dispatched = false
        var status = 0
        var log = HTTPResponse.Log()
        var ready: HTTPResponse?

        init(request: HTTPRequest, limit: Int, tooLarge: HTTPResponse?) {
            self.request = request
            self.limit = limit
            self.tooLarge = tooLarge
        }

        /// The response made and not yet queued, if any; taken (set to nil) by this call.
        func takeReady() -> HTTPResponse? {
            defer { ready = nil }
            return ready
        }
    }

    /// How much of an over-long body is read (and dropped) to answer 413 on a connection that stays usable;
    /// past this the connection is closed.
    private static let discardFactor = 4

    private static let access: MHD_AccessHandlerCallback = { context, connection, url, method, _, upload, uploadSize, slot in
        let box = Unmanaged<Box>.fromOpaque(context!).takeUnretainedValue()
        guard let connection, let slot, let uploadSize else { return cmhd_no }
        guard let stored = slot.pointee else {
            let request = HTTPRequest(
                method: String(cString: method!), path: String(cString: url!),
                headers: values(connection, cmhd_header_kind, lowercased: true),
                query: values(connection, cmhd_argument_kind, lowercased: false))
            let exchange: Exchange
            switch box.handler.head(request) {
            case .respond(let response):
                exchange = Exchange(request: request, limit: 0, tooLarge: nil)
                exchange.ready = response
            case .read(let limit, let tooLarge):
                exchange = Exchange(request: request, limit: limit, tooLarge: tooLarge)
                // A declared length over the limit is refused before any byte of the body is read.
                if let declared = request.headers["content-length"].flatMap({ Int($0) }), declared > limit {
                    exchange.ready = tooLarge
                }
            }
            box.active.withLock { $0 += 1 }
            slot.pointee = Unmanaged.passRetained(exchange).toOpaque()
            // A response decided now goes out now only when a body was announced (which is then left unread, and
            // the connection closed after it); otherwise at the request's end, keeping the connection alive.
            let announcesBody = request.headers["content-length"].map { $0 != "0" } ?? (request.headers["transfer-encoding"] != nil)
            if announcesBody, let response = exchange.takeReady() {
                return queue(response, on: connection, for: exchange)
            }
            return cmhd_yes
        }
        let exchange = Unmanaged<Exchange>.fromOpaque(stored).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            let count = uploadSize.pointee
            uploadSize.pointee = 0
            if exchange.overLimit || exchange.request.body.count + count > exchange.limit {
                exchange.overLimit = true
                exchange.request.body = []
                exchange.discarded += count
                return exchange.discarded > exchange.limit * discardFactor ? cmhd_no : cmhd_yes
            }
            exchange.request.body += UnsafeRawBufferPointer(start: upload, count: count)
            return cmhd_yes
        }
        if let response = exchange.takeReady() {
            return queue(response, on: connection, for: exchange)
        }
        if exchange.overLimit, let tooLarge = exchange.tooLarge {
            return queue(tooLarge, on: connection, for: exchange)
        }
        guard !exchange.dispatched else { return cmhd_yes }
        exchange.dispatched = true
        MHD_suspend_connection(connection)
        let handler = box.handler
        let request = exchange.request
        // The task's copy is now the body's only holder: it goes when the task is done with it.
        exchange.request.body = []
        let suspended = Connection(pointer: connection)
        Task {
            exchange.ready = await handler.respond(to: request)
            MHD_resume_connection(suspended.pointer)
        }
        return cmhd_yes
    }

    private static let finished: MHD_RequestCompletedCallback = { context, _, slot, _ in
        guard let context, let stored = slot?.pointee else { return }
        let box = Unmanaged<Box>.fromOpaque(context).takeUnretainedValue()
        let exchange = Unmanaged<Exchange>.fromOpaque(stored).takeRetainedValue()
        slot?.pointee = nil
        box.handler.completed(exchange.request, status: exchange.status, log: exchange.log, elapsed: .now - exchange.started)
        box.active.withLock { $0 -= 1 }
    }

    /// Queues `response` on `connection`.
    private static func queue(_ response: HTTPResponse, on connection: OpaquePointer, for exchange: Exchange) -> MHD_Result {
        let made: OpaquePointer?
        switch response.body {
        case .bytes(let bytes):
            made = bytes.withUnsafeBytes { buffer in
                MHD_create_response_from_buffer(buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress), cmhd_must_copy)
            }
        case .file(let descriptor, let size):
            made = MHD_create_response_from_fd(size, descriptor)
        case .stream(let stream):
            stream.attach(to: Connection(pointer: connection))
            made = MHD_create_response_from_callback(
                cmhd_size_unknown, 32 * 1024, ResponseStream.reader, Unmanaged.passRetained(stream).toOpaque(),
                ResponseStream.release)
        }
        guard let made else { return cmhd_no }
        for (name, value) in response.headers { MHD_add_response_header(made, name, value) }
        exchange.status = response.status
        exchange.log = response.log
        let queued = MHD_queue_response(connection, UInt32(response.status), made)
        MHD_destroy_response(made)
        return queued
    }

    /// Every value of one kind (headers, query arguments) of a connection; names lowercased when asked (ASCII
    /// only, as HTTP header names are).
    private static func values(
        _ connection: OpaquePointer, _ kind: MHD_ValueKind, lowercased: Bool
    ) -> [String: String] {
        struct Collected {
            var values: [String: String] = [:]
            let lowercased: Bool
        }
        var collected = Collected(lowercased: lowercased)
        // The context is a pointer to a local (no object allocated per request); libmicrohttpd calls back before
        // it returns.
        withUnsafeMutablePointer(to: &collected) { pointer in
            _ = MHD_get_connection_values(
                connection, kind,
                { context, _, key, value in
                    let collected = context!.assumingMemoryBound(to: Collected.self)
                    if let key {
                        let name = collected.pointee.lowercased ? HTTPServer.lowercasedName(key) : String(cString: key)
                        collected.pointee.values[name] = value.map { String(cString: $0) } ?? ""
                    }
                    return cmhd_yes
                }, pointer)
        }
        return collected.values
    }

    /// A header name in lowercase, made in one pass over its bytes: names of up to 15 bytes (`host`,
    /// `content-type`, `x-request-id`) then need no allocation, where `String.lowercased()` made a second string.
    private static func lowercasedName(_ key: UnsafePointer<CChar>) -> String {
        let length = strlen(key)
        return key.withMemoryRebound(to: UInt8.self, capacity: length) { bytes in
            String(unsafeUninitializedCapacity: length) { buffer in
                for index in 0..<length {
                    let byte = bytes[index]
                    buffer[index] = (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
                }
                return length
            }
        }
    }
}

/// A libmicrohttpd connection pointer, handed to the task that will resume it.
package struct Connection: @unchecked Sendable {
    let pointer: OpaquePointer
}
