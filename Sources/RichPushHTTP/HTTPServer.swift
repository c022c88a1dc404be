import CMicroHTTPD
import RichPushCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An HTTP/1.1 server on one listening address: libmicrohttpd with one internal thread (epoll), which parses
/// requests, reads bodies and writes responses; a request that needs time suspends its connection until its
/// response is ready, so a slow payload never holds the thread. A `ConnectionGate` of its own accepts the
/// connections and bounds what each client may hold (connections, time, buffered bytes); every request's head is
/// checked (`RequestHead`) before the handler sees it.
package final class HTTPServer: LifecycleService, @unchecked Sendable {
    /// Bounds on what clients may hold. The defaults are documented in docs/service.md ("Running the service"),
    /// which also says what a client over each gets.
    package struct Limits: Sendable {
        /// The most connections open at once. Default 1,024: far beyond the work `--max-in-flight` admits, so
        /// idle keep-alive clients cannot crowd out working ones, and well within the process's descriptors.
        package var connections = 1024
        /// The most connections from one client address; 0 for no limit. Default 256, as many as the payloads
        /// `--max-in-flight` admits by default: one client never needs more connections than it may have payloads
        /// in process, and one address then holds at most a quarter of the 1,024 connections, so a misbehaving
        /// client leaves room for others (an orchestrator's health probe among them).
        package var connectionsPerAddress = 256
        /// A connection idle this long (no byte in or out, a response not waiting on work) is closed. Default
        /// 30 s: a keep-alive client reuses its connection within that.
        package var idleTimeoutSeconds = 30
        /// A request's head (request line and headers) must be in within this of the connection's start (after a
        /// response: of the idle timeout's end at the latest); its body must then arrive at `minimumBodyRate`,
        /// counted over each window of this length. Default 10 s: a head is at most 16 KiB, which a gateway
        /// sends in one packet, so 10 s leaves a slow link room and bounds how long a client that trickles its
        /// bytes holds a connection.
        package var headerTimeoutSeconds = 10
        /// The least body bytes a second (counted over each `headerTimeoutSeconds`); 0 for no minimum. Default
        /// 16 KiB/s (128 kbit/s), slower than any gateway's link: a client that holds a connection with its
        /// body pays for it in bandwidth, and the longest body (64 MiB) may take 68 minutes.
        package var minimumBodyRate = 16 * 1024
        /// The most request-body bytes held in memory at once across the connections. Default 256 MiB: the
        /// 256 JSON bodies of 1 MiB that `--max-in-flight` admits, or four NDJSON bodies of 64 MiB.
        package var bufferedBodyBytes = 256 << 20
        /// The limits on a request's head.
        package var head = RequestHead.Limits()

        package init() {}

        /// Memory per connection for libmicrohttpd: the head, a record for each of its fields (64 bytes with
        /// alignment: `struct MHD_HTTP_Header`), and room for the response's headers; bodies are held apart, up to
        /// their own limit. 32 KiB by default: libmicrohttpd clears the whole of it for every request, so it is
        /// no larger than the documented limits need (measured in docs/performance.md, (s)).
        var connectionMemory: Int { head.bytes + (head.headerFields + head.queryArguments) * 64 + 3584 }
    }

    // Touched by libmicrohttpd's thread, by `quiesce` and `stop`: the daemon pointer is set once in init.
    private let daemon: OpaquePointer
    private let handler: any HTTPHandler
    /// The requests in progress, from their head to their completion: counted, never refused (the gate of
    /// connections and the handler refuse), and waited on by `untilQuiet`.
    private let active = WorkGate()
    private let gate: ConnectionGate
    private let suspensions = Suspensions()
    /// The port listened on (as bound, when 0 was asked for).
    package let port: Int

    /// Starts listening on `address` (`HOST:PORT`, an IPv6 host in brackets) and serving.
    package init(listening address: String, limits: Limits = Limits(), handler: any HTTPHandler) throws(HTTPServerError)
    {
        self.handler = handler
        guard let socketAddress = SocketAddress(address) else {
            throw HTTPServerError(detail: "'\(address)' is not ADDRESS:PORT (an IPv6 address in brackets)")
        }
        let listener: Int32
        switch socketAddress.listen() {
        case .success(let descriptor): listener = descriptor
        case .failure(let error): throw HTTPServerError(detail: "cannot listen on \(address): \(error)")
        }
        gate = ConnectionGate(
            listener: listener,
            policy: ConnectionGate.Policy(
                connections: limits.connections, connectionsPerAddress: limits.connectionsPerAddress,
                headerTimeout: .seconds(limits.headerTimeoutSeconds), idleTimeout: .seconds(limits.idleTimeoutSeconds),
                minimumBodyRate: limits.minimumBodyRate, bufferedBodyBytes: limits.bufferedBodyBytes))
        port = SocketAddress.boundPort(of: listener)
        // The callbacks' context is retained until the daemon is stopped (its thread joined) in deinit, or for good
        // when it cannot be.
        let box = Unmanaged.passRetained(
            Box(handler: handler, active: active, gate: gate, head: limits.head, suspensions: suspensions))
        // libmicrohttpd's own connection limit is only a backstop (the gate admits): twice ours, so that a
        // connection whose close the gate has counted and libmicrohttpd not yet never turns a new one away.
        var settings = cmhd_settings(
            connection_limit: UInt32(limits.connections * 2), idle_timeout_seconds: UInt32(limits.idleTimeoutSeconds),
            connection_memory: limits.connectionMemory, connection_memory_increment: 1024)
        var callbacks = cmhd_callbacks(
            context: box.toOpaque(), access: HTTPServer.access, completed: HTTPServer.finished,
            connection: HTTPServer.connectionNotice, target: HTTPServer.target)
        guard let started = cmhd_start(&settings, &callbacks) else {
            gate.discard()
            box.release()
            throw HTTPServerError(detail: "cannot serve on \(address): \(Errno(errno))")
        }
        daemon = started
        self.box = box
        gate.start(daemon: started)
    }

    private let box: Unmanaged<Box>

    deinit {
        gate.stop()
        // libmicrohttpd 0.9.75 aborts the process when its daemon is stopped with a connection suspended. A request
        // whose work still runs holds its connection so; then the daemon is left serving, with the callbacks'
        // context, until the process exits (which closes its sockets), as a drain's cut-off leaves it.
        guard suspensions.stop() else { return }
        MHD_stop_daemon(daemon)
        box.release()
    }

    /// Requests begun and not yet over (response not fully sent).
    package var requestsInProgress: Int { active.inside }

    /// Returns once no request is in progress (at once if none is), or once the calling task is cancelled.
    package func untilQuiet() async {
        await active.untilEmpty()
    }

    /// What the server's gate has seen: connections open, refused and cut, body bytes held.
    package var statistics: ConnectionGate.Statistics { gate.statistics }

    /// Stops accepting connections (the listening socket is closed); connections already open are served, each
    /// closed once the response to its request in progress (or to its next one) is sent, with `Connection: close`,
    /// so that a keep-alive client goes to another server rather than holding this one's drain open (as
    /// swift-nio's quiescing helper closes each channel after its response).
    package func quiesce() {
        box.takeUnretainedValue().closing.store(true, ordering: .relaxed)
        gate.quiesce()
    }

    /// Serves until the runner asks for a graceful shutdown (`ServiceRunner`), as Hummingbird's `Server.run()`
    /// does: then stops accepting connections and returns once no request is in progress. Cancelled, it returns at
    /// once. Listening starts with the server, before `run`; it stops, closing the connections left, when the
    /// server is released.
    package func run() async throws {
        try? await gracefulShutdown()
        quiesce()
        await untilQuiet()
    }

    // MARK: - libmicrohttpd's side

    /// What the callbacks need: the handler, the count of requests in progress, the gate and the head's limits.
    private final class Box {
        let handler: any HTTPHandler
        let active: WorkGate
        let gate: ConnectionGate
        let head: RequestHead.Limits
        let suspensions: Suspensions
        /// Set by `quiesce`: every response from then on closes its connection once sent.
        let closing = Atomic<Bool>(false)
        init(
            handler: any HTTPHandler, active: WorkGate, gate: ConnectionGate, head: RequestHead.Limits,
            suspensions: Suspensions
        ) {
            self.handler = handler
            self.active = active
            self.gate = gate
            self.head = head
            self.suspensions = suspensions
        }
    }

    /// One request, from its request line to its completion; touched on the server's thread only, but for the
    /// response set by the task that made it while the connection is suspended.
    ///
    /// `ready` needs no lock of its own: the task sets it and then calls `MHD_resume_connection`, and the server's
    /// thread reads it only after libmicrohttpd has taken the connection back from the resumed list; both steps go
    /// through libmicrohttpd's lock on that list (`cleanup_connection_mutex`), which orders the write before the
    /// read. A lock per request (a mutex and a condition allocated, initialised and destroyed) showed in the
    /// service's profile.
    private final class Exchange: @unchecked Sendable {
        /// The target as received (before the request's head is in).
        let target: RequestTarget
        let started = ContinuousClock.now
        /// Set when the head is in.
        var request: HTTPRequest?
        /// Whether the head is in (`request` set): asked at every call of the access callback, where testing the
        /// optional copied the request and destroyed the copy (in `GET /healthz`'s profile).
        var headIn = false
        var tenant: ConnectionGate.Tenant?
        var body: [UInt8] = []
        /// The body's declared length, if any.
        var declared: Int?
        var limit = 0
        var tooLarge: HTTPResponse?
        var overLimit = false
        var overBudget = false
        /// Bytes counted against the gate's bound on bodies held: the capacity asked for the body's buffer.
        var charged = 0
        var discarded = 0
        var dispatched = false
        var status = 0
        var log = HTTPResponse.Log()
        var ready: HTTPResponse?

        init(target: RequestTarget) {
            self.target = target
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

    /// The answer to a body that does not fit in what may be held now.
    private static let noRoom = HTTPResponse.error(
        503, .buffersFull, "request bodies being received fill the server's memory bound; retry later",
        headers: [("Retry-After", "1")]
    ).prepared()

    /// `MHD_OPTION_URI_LOG_CALLBACK`: the request line is in, its target still raw (libmicrohttpd has not yet split
    /// the query or decoded the escapes). The request's `Exchange` starts here.
    ///
    /// A query with more arguments than the limit is emptied here: libmicrohttpd 0.9.75 keeps a record of each
    /// argument in the connection's memory, and when that runs out midway it queues its 431 but goes on parsing,
    /// and the connection then hangs unanswered until the idle timeout. The query's first byte is set to NUL, in
    /// the read buffer libmicrohttpd itself writes the target's separators into (it passes it as `const`), so that
    /// it finds no argument; the request is answered 414 when its head is in.
    private static let target:
        @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) -> UnsafeMutableRawPointer? = {
            context, uri, _ in
            let box = Unmanaged<Box>.fromOpaque(context!).takeUnretainedValue()
            var scanned = RequestTarget()
            if let uri {
                let length = strlen(uri)
                scanned = uri.withMemoryRebound(to: UInt8.self, capacity: length) {
                    RequestTarget(UnsafeBufferPointer(start: $0, count: length))
                }
                if scanned.arguments > box.head.queryArguments, let query = scanned.query {
                    UnsafeMutablePointer(mutating: uri)[query + 1] = 0
                }
            }
            return Unmanaged.passRetained(Exchange(target: scanned)).toOpaque()
        }

    /// `MHD_OPTION_NOTIFY_CONNECTION`: a connection the gate handed over starts (its tenant becomes the
    /// connection's context), or is closed.
    private static let connectionNotice: MHD_NotifyConnectionCallback = { context, connection, socketContext, code in
        let box = Unmanaged<Box>.fromOpaque(context!).takeUnretainedValue()
        guard let connection, let socketContext else { return }
        if code == cmhd_connection_started {
            if let tenant = box.gate.started(socket: cmhd_connection_socket(connection)) {
                socketContext.pointee = Unmanaged.passUnretained(tenant).toOpaque()
            }
        } else if code == cmhd_connection_closed, let stored = socketContext.pointee {
            box.gate.closed(Unmanaged<ConnectionGate.Tenant>.fromOpaque(stored).takeUnretainedValue())
            socketContext.pointee = nil
        }
    }

    private static let access: MHD_AccessHandlerCallback = {
        context, connection, url, method, version, upload, uploadSize, slot in
        let box = Unmanaged<Box>.fromOpaque(context!).takeUnretainedValue()
        guard let connection, let url, let method, let version, let slot, let uploadSize else { return cmhd_no }
        let exchange: Exchange
        if let stored = slot.pointee {
            exchange = Unmanaged<Exchange>.fromOpaque(stored).takeUnretainedValue()
        } else {
            // libmicrohttpd calls the target callback for every request line; this is only a backstop.
            exchange = Exchange(target: RequestTarget())
            slot.pointee = Unmanaged.passRetained(exchange).toOpaque()
        }
        guard exchange.headIn else {
            return head(of: exchange, connection, method: method, url: url, version: version, box)
        }
        if uploadSize.pointee > 0 {
            let count = uploadSize.pointee
            uploadSize.pointee = 0
            return receive(UnsafeRawBufferPointer(start: upload, count: count), for: exchange, box)
        }
        if let response = exchange.takeReady() {
            return queue(response, on: connection, for: exchange, box)
        }
        if exchange.overLimit, let tooLarge = exchange.tooLarge {
            return queue(tooLarge, on: connection, for: exchange, box)
        }
        if exchange.overBudget {
            return queue(noRoom, on: connection, for: exchange, box)
        }
        guard !exchange.dispatched else { return cmhd_yes }
        exchange.dispatched = true
        let suspended = Connection(pointer: connection, suspensions: box.suspensions)
        guard suspended.suspend() else { return queue(stopping, on: connection, for: exchange, box) }
        if let tenant = exchange.tenant { box.gate.requestIn(tenant) }
        let handler = box.handler
        var request = exchange.request!
        request.body = exchange.body
        // The task's copy is now the body's only holder: it goes when the task is done with it.
        exchange.body = []
        Task {
            exchange.ready = await handler.respond(to: request)
            suspended.resume()
        }
        return cmhd_yes
    }

    /// The answer to a request whose body came in as the server stopped: its work is not started (the
    /// connection cannot wait for it), and the connection is closed, so that the client retries on a new one.
    private static let stopping = HTTPResponse.error(
        503, .draining, "the server is stopping; retry on another connection",
        headers: [("Retry-After", "1"), ("Connection", "close")]
    ).prepared()

    /// The request's head is in: it is checked, then its handler decides.
    private static func head(
        of exchange: Exchange, _ connection: OpaquePointer, method: UnsafePointer<CChar>, url: UnsafePointer<CChar>,
        version: UnsafePointer<CChar>, _ box: Box
    ) -> MHD_Result {
        var reader = HeadReader(
            connection, method: method, url: url, version: version, targetBytes: exchange.target.bytes)
        reader.head.target = exchange.target
        let request = HTTPRequest(
            method: String(cString: method), path: String(cString: url), headers: reader.headers,
            query: arguments(connection), started: exchange.started)
        exchange.request = request
        exchange.headIn = true
        exchange.tenant = cmhd_connection_context(connection)?.pointee.map {
            Unmanaged<ConnectionGate.Tenant>.fromOpaque($0).takeUnretainedValue()
        }
        _ = box.active.enter()
        let tenant = exchange.tenant
        // A refused head is answered now and its connection closed: what follows it may not be a request.
        if var refusal = reader.head.refusal(box.head) {
            refusal.headers.append(("Connection", "close"))
            if let tenant { box.gate.headArrived(tenant, readingBody: false) }
            return queue(refusal, on: connection, for: exchange, box)
        }
        exchange.declared = reader.head.declaredLength
        switch box.handler.head(request) {
        case .respond(let response):
            exchange.ready = response
        case .read(let limit, let tooLarge, let context):
            exchange.request?.context = context
            exchange.limit = limit
            exchange.tooLarge = tooLarge
            // A declared length over the limit is refused before any byte of the body is read; one that does not
            // fit in what may be held now gets 503.
            if let declared = exchange.declared {
                if declared > limit {
                    exchange.ready = tooLarge
                } else if !box.gate.canBuffer(declared) {
                    exchange.ready = noRoom
                }
            } else if limit == 0, reader.head.transferEncoding != nil {
                // A route that takes no body (`GET /metrics`) given a chunked one: refused now, as a declared one is.
                // Left to the body, its first byte was past the limit and the nothing it may discard, and the
                // connection was closed without an answer.
                exchange.ready = tooLarge
            }
        }
        // A response decided now goes out now only when a body was announced (which is then left unread, and the
        // connection closed after it); otherwise at the request's end, keeping the connection alive. A request
        // without a body that expects 100-continue (which RFC 9110 §10.1.1 forbids a client) is answered now too:
        // left to its end, libmicrohttpd 0.9.75 sent the 100, read what followed as its body, and closed the
        // connection without its answer; now the answer goes out, then the connection is closed, nothing after it
        // read.
        let announcesBody = exchange.declared.map { $0 != 0 } ?? (reader.head.transferEncoding != nil)
        if let tenant { box.gate.headArrived(tenant, readingBody: announcesBody && exchange.ready == nil) }
        if announcesBody || reader.headers["expect"] != nil, let response = exchange.takeReady() {
            return queue(response, on: connection, for: exchange, box)
        }
        return cmhd_yes
    }

    /// Body bytes arrived: kept, or dropped once the body is over its limit or out of room.
    private static func receive(_ bytes: UnsafeRawBufferPointer, for exchange: Exchange, _ box: Box) -> MHD_Result {
        if !exchange.overLimit, !exchange.overBudget {
            let needed = exchange.body.count + bytes.count
            if needed > exchange.limit {
                exchange.overLimit = true
            } else {
                // The buffer grows by doubling, to the declared length at most; the growth is counted (as asked
                // for, not as the allocator rounds it) before it is allocated.
                let capacity = exchange.charged
                let target =
                    needed > capacity ? min(max(needed, 2 * capacity), exchange.declared ?? exchange.limit) : capacity
                if box.gate.received(bytes.count, growth: target - capacity, on: exchange.tenant) {
                    exchange.charged = target
                    if target > capacity { exchange.body.reserveCapacity(target) }
                    exchange.body += bytes
                    return cmhd_yes
                }
                exchange.overBudget = true
            }
            box.gate.discharge(exchange.charged)
            exchange.charged = 0
            exchange.body = []
        } else {
            _ = box.gate.received(bytes.count, growth: 0, on: exchange.tenant)
        }
        exchange.discarded += bytes.count
        return exchange.discarded > exchange.limit * discardFactor ? cmhd_no : cmhd_yes
    }

    private static let finished: MHD_RequestCompletedCallback = { context, connection, slot, termination in
        guard let context, let stored = slot?.pointee else { return }
        let box = Unmanaged<Box>.fromOpaque(context).takeUnretainedValue()
        let exchange = Unmanaged<Exchange>.fromOpaque(stored).takeRetainedValue()
        slot?.pointee = nil
        box.gate.discharge(exchange.charged)
        // A request whose head never came in whole (the connection closed, or libmicrohttpd refused it) is not
        // one the handler knows.
        guard let request = exchange.request.take() else { return }
        // The clock read once for the request's end.
        let now = ContinuousClock.now
        if let tenant = exchange.tenant { box.gate.requestOver(tenant, at: now) }
        var log = exchange.log
        log.incomplete = incompleteReason(termination)
        // None of ours queued: libmicrohttpd may have answered itself (a malformed chunked body), with its status.
        let status = exchange.status != 0 ? exchange.status : connection.map { Int(cmhd_queued_status($0)) } ?? 0
        box.handler.completed(request, status: status, log: log, elapsed: now - exchange.started)
        box.active.leave()
    }

    /// The access log's word for how libmicrohttpd (0.9.75) says a request ended, nil when its response was sent
    /// whole: `client-closed` (the client closed its end before its request was in), `read-error` (the connection
    /// broke while the request came in), `timeout` (idle past `--idle-timeout`), `shutdown` (the server stopped with
    /// the request open), `error` (anything else: a send failed, so a client gone while its response was sent, for
    /// libmicrohttpd reads nothing then; the server cut the connection: `--min-body-rate`, a body far past its
    /// limit, a streamed body cut as the server stops; or libmicrohttpd refused the request itself, with its own
    /// 400, 413 or 500, sent whole).
    static func incompleteReason(_ termination: MHD_RequestTerminationCode) -> String? {
        switch termination {
        case cmhd_terminated_completed_ok: nil
        case cmhd_terminated_timeout_reached: "timeout"
        case cmhd_terminated_daemon_shutdown: "shutdown"
        case cmhd_terminated_read_error: "read-error"
        case cmhd_terminated_client_abort: "client-closed"
        case cmhd_terminated_with_error: "error"
        default: "error"  // a code a later version adds
        }
    }

    /// Queues `response` on `connection`.
    private static func queue(
        _ response: HTTPResponse, on connection: OpaquePointer, for exchange: Exchange, _ box: Box
    ) -> MHD_Result {
        // Read by libmicrohttpd when it writes the response's head, after this call.
        if box.closing.load(ordering: .relaxed) { cmhd_close_after_response(connection) }
        if let premade = response.premade?.pointer {
            exchange.status = response.status
            exchange.log = response.log
            return MHD_queue_response(connection, UInt32(response.status), premade)
        }
        let made: OpaquePointer?
        switch response.body {
        case .bytes(let bytes):
            made = PreparedResponse.response(copying: bytes)
        case .file(let descriptor, let size):
            made = MHD_create_response_from_fd(size, descriptor)
        case .stream(let stream):
            stream.attach(to: Connection(pointer: connection, suspensions: box.suspensions))
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

    /// The query arguments of a connection's request, by name (decoded by libmicrohttpd).
    private static func arguments(_ connection: OpaquePointer) -> [String: String] {
        var arguments: [String: String] = [:]
        // The context is a pointer to a local (no object allocated per request); libmicrohttpd calls back before
        // it returns.
        withUnsafeMutablePointer(to: &arguments) { pointer in
            _ = MHD_get_connection_values(
                connection, cmhd_argument_kind,
                { context, _, key, value in
                    if let key {
                        context!.assumingMemoryBound(to: [String: String].self).pointee[String(cString: key)] =
                            value.map { String(cString: $0) } ?? ""
                    }
                    return cmhd_yes
                }, pointer)
        }
        return arguments
    }

    /// A header name in lowercase, made in one pass over its bytes: names of up to 15 bytes (`host`,
    /// `content-type`, `x-request-id`) then need no allocation, where `String.lowercased()` made a second string.
    fileprivate static func lowercasedName(_ key: UnsafePointer<CChar>) -> String {
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

/// A libmicrohttpd connection pointer, handed to the task that will resume it, and its server's count of suspended
/// connections, through which it is suspended and resumed.
package struct Connection: @unchecked Sendable {
    let pointer: OpaquePointer
    let suspensions: Suspensions

    /// Suspends the connection (on libmicrohttpd's thread, in one of its callbacks); false, leaving it as it is,
    /// once the server is stopping.
    func suspend() -> Bool {
        guard suspensions.enter() else { return false }
        MHD_suspend_connection(pointer)
        return true
    }

    /// Resumes the connection `suspend()` suspended; once for each.
    func resume() {
        MHD_resume_connection(pointer)
        suspensions.leave()
    }
}

/// The connections a server has suspended and not yet resumed, and whether it is stopping. libmicrohttpd 0.9.75
/// aborts the process when its daemon is stopped with a connection suspended (`MHD_stop_daemon`), so the server
/// stops its daemon only when `stop()` finds none, and none is suspended after that. A resume is counted once
/// `MHD_resume_connection` has returned: the daemon's stop then takes the connection back before it closes it.
///
/// One atomic word, the count above its low bit and `stopping` in it: a server-wide lock taken at every suspend
/// and resume (by libmicrohttpd's thread and by the pool's) cost the payload route about 0.6 us a request, 2%, in
/// two runs of 8 alternated rounds against the server without either; this word, 32.65 against 32.77 us.
final class Suspensions: Sendable {
    private let word = Atomic<Int>(0)
    private static let stopping = 1
    private static let one = 2

    /// Counts a connection about to be suspended; false once `stop()` has been called.
    func enter() -> Bool {
        var current = word.load(ordering: .relaxed)
        while current & Self.stopping == 0 {
            let (exchanged, found) = word.compareExchange(
                expected: current, desired: current + Self.one, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = found
        }
        return false
    }

    /// A connection counted by `enter()` has been resumed.
    func leave() {
        word.subtract(Self.one, ordering: .releasing)
    }

    /// Whether the daemon may stop: no connection is suspended, and from now on none will be.
    func stop() -> Bool {
        let (_, now) = word.bitwiseOr(Self.stopping, ordering: .acquiringAndReleasing)
        return now == Self.stopping
    }
}

/// A request's header fields as libmicrohttpd parsed them: into `HTTPRequest`'s dictionary and a `RequestHead`.
///
/// It also proves that the fields account for every byte of the head. libmicrohttpd 0.9.75 parses the head in
/// place, in its read buffer: it writes a NUL where the space after the method, the space before the version,
/// each line's CR and LF, and each header's colon were, and hands out pointers into that buffer, with lengths
/// taken by `strlen`; a NUL byte inside a field therefore ends it there, silently (`/v1/enrich\0/x` is
/// `/v1/enrich`). Here each line must begin where the previous one ended, one byte on for an LF or two for a
/// CRLF; between a name's colon and its value there may only be the spaces and tabs libmicrohttpd skipped; the head
/// must end right after the last line and the empty one. Any other gap is bytes no field holds: a NUL byte, or a
/// line folded onto the next (libmicrohttpd moves the joined field elsewhere). Only bytes inside the head,
/// `[method, method + head size)`, are read; a field pointing outside it is such a gap too.
private struct HeadReader {
    var headers: HTTPHeaders
    var head = RequestHead()
    private let start: UnsafePointer<CChar>
    private let end: UnsafePointer<CChar>
    /// Where the previous line's content ended (the NUL written over its CR or LF); nil once a gap is found.
    private var lineEnd: UnsafePointer<CChar>?

    init(
        _ connection: OpaquePointer, method: UnsafePointer<CChar>, url: UnsafePointer<CChar>,
        version: UnsafePointer<CChar>, targetBytes: Int
    ) {
        start = method
        head.bytes = cmhd_head_size(connection)
        end = method + head.bytes
        // The names and values are within the head; the lengths before each take 8 bytes a field more.
        headers = HTTPHeaders(reservingCapacity: head.bytes + 64)
        // The request line: the method, the NUL over its space, any further spaces, the target as received (its
        // length taken before libmicrohttpd decoded it in place), the NUL over the space before the version.
        let methodEnd = method + strlen(method)
        if head.bytes > 0, url > methodEnd, url < end, version == url + targetBytes + 1, version + 8 < end,
            UnsafeBufferPointer(start: methodEnd + 1, count: url - methodEnd - 1).allSatisfy({ $0 == 0x20 })
        {
            lineEnd = version + strlen(version)
        } else {
            head.unaccounted = true
        }
        withUnsafeMutablePointer(to: &self) { pointer in
            _ = MHD_get_connection_values_n(
                connection, cmhd_header_kind,
                { context, _, key, keySize, value, valueSize in
                    guard let key else { return cmhd_yes }
                    context!.assumingMemoryBound(to: HeadReader.self).pointee.add(key, keySize, value, valueSize)
                    return cmhd_yes
                }, pointer)
        }
        if let lineEnd {
            // The last line's end and the empty line: two to four bytes, all NUL (LF or CRLF, twice).
            let rest = end - lineEnd
            if !(2...4).contains(rest) || UnsafeBufferPointer(start: lineEnd, count: rest).contains(where: { $0 != 0 })
            {
                head.unaccounted = true
            }
        }
        head.contentLength = headers["content-length"]
        head.transferEncoding = headers["transfer-encoding"]
        head.expect = headers["expect"]
        head.missingHost = !headers.contains("host")
        head.http10 = strcmp(version, "HTTP/1.0") == 0
    }

    private mutating func add(
        _ key: UnsafePointer<CChar>, _ keySize: Int, _ value: UnsafePointer<CChar>?, _ valueSize: Int
    ) {
        head.headerFields += 1
        let name = HTTPServer.lowercasedName(key)
        if head.repeated == nil, RequestHead.isSingleton(name), headers.contains(name) {
            head.repeated = name
        }
        // A value's trailing spaces and tabs are not part of it (RFC 9110 §5.5: libmicrohttpd strips the leading ones
        // only), but for the two fields libmicrohttpd frames the body by and `Expect`, which it answers a 100 by: kept
        // as it reads them, so that what the server checks is what libmicrohttpd acted on.
        var kept = value == nil ? 0 : valueSize
        if name != "content-length", name != "transfer-encoding", name != "expect", let value {
            while kept > 0, value[kept - 1] == 0x20 || value[kept - 1] == 0x09 { kept -= 1 }
        }
        headers.append(name: name, value: UnsafeRawBufferPointer(start: value, count: kept))
        if head.invalidName == nil, !RequestHead.isToken(UnsafeRawBufferPointer(start: key, count: keySize)) {
            head.invalidName = String(cString: key)
        }
        if head.invalidValue == nil, RequestHead.hasControl(UnsafeRawBufferPointer(start: value, count: valueSize)) {
            head.invalidValue = name
        }
        guard let previous = lineEnd else { return }
        // The bounds first: nothing outside the head is read.
        guard let value, key > start, value > key + keySize, value + valueSize < end,
            key == previous + 1 || (key == previous + 2 && previous[1] == 0),
            UnsafeBufferPointer(start: key + keySize + 1, count: value - key - keySize - 1).allSatisfy({
                $0 == 0x20 || $0 == 0x09
            })
        else {
            head.unaccounted = true
            lineEnd = nil
            return
        }
        lineEnd = value + valueSize
    }
}
