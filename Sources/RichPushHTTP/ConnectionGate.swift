import CMicroHTTPD
import RichPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// A listener's door and watch: takes the connections from the listening socket itself, counts them in total and
/// per client address, and answers those over either limit at once (`503`, `Connection: close`); hands the rest to
/// libmicrohttpd; then watches how long each request takes to arrive, and cuts the connection of one too slow. It
/// also counts the request-body bytes its connections hold in memory, against a bound.
///
/// Why not libmicrohttpd's own accept: at its connection limit it stops accepting, so connections past it (an
/// orchestrator's health probe among them) wait unanswered in the backlog; it has no answer for a connection over
/// its per-address limit but a silent close; and its idle timeout counts only silence, so a client that sends a
/// byte now and then holds its connection for ever.
///
/// One thread per listener accepts and, while connections are open, looks at them every `tick`. libmicrohttpd's
/// thread reports each connection's start and close (`MHD_OPTION_NOTIFY_CONNECTION`) and each request's progress.
/// A connection is cut with `shutdown(2)`, under the lock that its close notice also takes: libmicrohttpd sends
/// that notice before it closes the socket (`MHD_cleanup_connections` in 0.9.75), so a descriptor number already
/// reused by another connection is never shut down by mistake.
package final class ConnectionGate: @unchecked Sendable {
    /// What the gate enforces: `HTTPServer.Limits`, in the gate's units.
    struct Policy: Sendable {
        var connections: Int
        var connectionsPerAddress: Int
        var headerTimeout: Duration
        var idleTimeout: Duration
        var minimumBodyRate: Int
        var bufferedBodyBytes: Int
    }

    /// What the gate has seen, since it started.
    package struct Statistics: Sendable, Equatable {
        /// Connections open now.
        package var open = 0
        /// Connections answered 503 and closed at once: over the per-address limit, over the total.
        package var refusedForAddress = 0
        package var refusedForTotal = 0
        /// Connections cut: a request's head not in within its bound; a body slower than the minimum rate. Either
        /// also when the client ended its sending side (FIN) with the head or the body incomplete.
        package var cutHeads = 0
        package var cutBodies = 0
        /// Request-body bytes held in memory now (as the buffers' capacities).
        package var bufferedBodyBytes = 0
    }

    /// Where a connection's current request is.
    enum Phase {
        /// Waiting for a request's head since `since`: the connection's first, or one after a response.
        case head(since: ContinuousClock.Instant, first: Bool)
        /// The head is in; the body is being read since `since`.
        case body(since: ContinuousClock.Instant)
        /// The request is in: its handler works, or its response goes out (the idle timeout watches the sending).
        case working
    }

    /// One connection, from its accept to libmicrohttpd's notice that it closed. Its fields are the gate's lock's.
    final class Tenant {
        let socket: Int32
        let address: ClientAddress
        fileprivate var phase: Phase
        /// Body bytes received in the current request, and the start of the current rate window with the count then.
        fileprivate var bodyBytes = 0
        fileprivate var window: (start: ContinuousClock.Instant, bytes: Int)? = nil
        fileprivate var cut = false
        /// The body bytes received when a look last found the client's sending side ended with the request
        /// incomplete; nil when it did not.
        fileprivate var endedAt: Int? = nil

        fileprivate init(socket: Int32, address: ClientAddress, accepted: ContinuousClock.Instant) {
            self.socket = socket
            self.address = address
            phase = .head(since: accepted, first: true)
        }
    }

    private struct State {
        /// Handed to libmicrohttpd, its start not yet reported; then started, until closed. By socket.
        var pending: [Int32: Tenant] = [:]
        var active: [Int32: Tenant] = [:]
        var perAddress: [ClientAddress: Int] = [:]
        var statistics = Statistics()
        var listening = true
        var listenerClosed = false
        var stopping = false
        var exited = false
    }

    /// How often open connections are looked at: a slow request is cut within its bound plus this.
    static let tick = Duration.milliseconds(250)
    /// The most connections accepted in one go before the connections are looked at again.
    private static let acceptBatch = 256

    private let policy: Policy
    private let listener: Int32
    private let state = LockedValue(State())
    /// A pipe that wakes the gate's thread (to quiesce or stop).
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let refusals: (address: [UInt8], total: [UInt8])

    /// A gate over `listener` (a listening, non-blocking socket it now owns); it accepts nothing before `start`.
    init(listener: Int32, policy: Policy) {
        self.listener = listener
        self.policy = policy
        var ends: [Int32] = [-1, -1]
        // Out of descriptors before the server even starts: not an input error.
        guard pipe(&ends) == 0 else { fatalError("pipe: \(Errno(errno))") }
        for end in ends {
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        (wakeRead, wakeWrite) = (ends[0], ends[1])
        refusals = (
            Self.refusal("\(policy.connectionsPerAddress) connections are open from this address; retry later"),
            Self.refusal("\(policy.connections) connections are open; retry later")
        )
    }

    deinit { close(wakeWrite) }

    /// Closes the listening socket and the thread's end of the pipe, for a gate never started.
    func discard() {
        close(listener)
        close(wakeRead)
    }

    /// Starts accepting connections for `daemon`, on a thread of the gate's own.
    func start(daemon: OpaquePointer) {
        let pointer = Daemon(pointer: daemon)
        startDedicatedThread { [self] in run(pointer) }
    }

    /// Stops accepting: the listening socket is closed when this returns; open connections are still watched.
    func quiesce() {
        state.withLock { $0.listening = false }
        wake()
        state.wait { $0.listenerClosed ? () : nil }
    }

    /// Stops the thread (and closes the listening socket); returns when it has exited. libmicrohttpd is given no
    /// connection after this.
    func stop() {
        state.withLock { $0.stopping = true }
        wake()
        state.wait { $0.exited ? () : nil }
    }

    var statistics: Statistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.open = state.pending.count + state.active.count
            return statistics
        }
    }

    // MARK: - Reports from libmicrohttpd's thread

    /// A connection handed over has started: its tenant, to keep as the connection's context.
    func started(socket: Int32) -> Tenant? {
        state.withLock { state in
            guard let tenant = state.pending.removeValue(forKey: socket) else { return nil }
            state.active[socket] = tenant
            return tenant
        }
    }

    /// A connection is closed (its socket is not yet).
    func closed(_ tenant: Tenant) {
        state.withLock { state in
            if state.active.removeValue(forKey: tenant.socket) != nil { Self.release(tenant.address, &state) }
        }
    }

    /// A request's head is in; its body is read next when `readingBody`.
    func headArrived(_ tenant: Tenant, readingBody: Bool) {
        state.withLock { _ in
            tenant.phase = readingBody ? .body(since: .now) : .working
            tenant.bodyBytes = 0
            tenant.window = nil
        }
    }

    /// `count` more body bytes arrived, to be held in a buffer that grows by `growth` bytes: false (and nothing
    /// counted against the bound) when that growth would take the bytes held past it.
    func received(_ count: Int, growth: Int, on tenant: Tenant?) -> Bool {
        state.withLock { state in
            if let tenant { tenant.bodyBytes += count }
            guard growth > 0 else { return true }
            guard state.statistics.bufferedBodyBytes + growth <= policy.bufferedBodyBytes else { return false }
            state.statistics.bufferedBodyBytes += growth
            return true
        }
    }

    /// Whether `bytes` more could be held now (nothing is counted).
    func canBuffer(_ bytes: Int) -> Bool {
        state.withLock { $0.statistics.bufferedBodyBytes + bytes <= policy.bufferedBodyBytes }
    }

    /// Body bytes no longer held.
    func discharge(_ bytes: Int) {
        guard bytes > 0 else { return }
        state.withLock { $0.statistics.bufferedBodyBytes -= bytes }
    }

    /// The request is in whole: no bound applies until its response is out.
    func requestIn(_ tenant: Tenant) {
        state.withLock { _ in tenant.phase = .working }
    }

    /// The request is over (its response sent, at `instant`); the connection waits for the next.
    func requestOver(_ tenant: Tenant, at instant: ContinuousClock.Instant) {
        state.withLock { _ in tenant.phase = .head(since: instant, first: false) }
    }

    // MARK: - The gate's thread

    /// A daemon pointer, for the gate's thread.
    private struct Daemon: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    private func run(_ daemon: Daemon) {
        var listening = true
        var acceptPaused = false
        var nextLook = ContinuousClock.now + Self.tick
        while true {
            let (stopping, quiesced, watching) = state.withLock { state in
                (state.stopping, !state.listening, !state.pending.isEmpty || !state.active.isEmpty)
            }
            if listening, quiesced || stopping {
                close(listener)
                listening = false
                state.update { $0.listenerClosed = true }
            }
            if stopping { break }
            var descriptors = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            if listening, !acceptPaused { descriptors.append(pollfd(fd: listener, events: Int16(POLLIN), revents: 0)) }
            let wait = watching || acceptPaused ? max(0, Int32((nextLook - .now).inMilliseconds)) : -1
            _ = poll(&descriptors, nfds_t(descriptors.count), wait)
            if descriptors[0].revents != 0 {
                var bytes = [UInt8](repeating: 0, count: 64)
                while read(wakeRead, &bytes, bytes.count) > 0 {}
            }
            acceptPaused = false
            if descriptors.count > 1, descriptors[1].revents != 0 {
                // Out of descriptors: the connections wait in the backlog until the next look, rather than the
                // thread spinning on a listener that stays readable.
                acceptPaused = !acceptAll(daemon.pointer)
            }
            let now = ContinuousClock.now
            if now >= nextLook {
                look(now)
                nextLook = now + Self.tick
            }
        }
        close(wakeRead)
        state.update { $0.exited = true }
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    /// Accepts what waits, up to a batch; false when the process is out of descriptors (or memory).
    private func acceptAll(_ daemon: OpaquePointer) -> Bool {
        for _ in 0..<Self.acceptBatch {
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let socket = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    cmhd_accept(listener, $0, &length)
                }
            }
            if socket < 0 {
                switch errno {
                case EINTR, ECONNABORTED, EPROTO: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM: return false
                default: return true
                }
            }
            admit(socket, address, length, daemon)
        }
        return true
    }

    private func admit(_ socket: Int32, _ address: sockaddr_storage, _ length: socklen_t, _ daemon: OpaquePointer) {
        let client = ClientAddress(address)
        let refusal: [UInt8]? = state.withLock { state in
            // A tenant still pending under this descriptor number was handed over and dropped by libmicrohttpd
            // without a start (it could not allocate the connection): its socket is closed, so its count goes.
            if let stale = state.pending.removeValue(forKey: socket) { Self.release(stale.address, &state) }
            if state.pending.count + state.active.count >= policy.connections {
                state.statistics.refusedForTotal += 1
                return refusals.total
            }
            let held = state.perAddress[client, default: 0]
            if policy.connectionsPerAddress > 0, held >= policy.connectionsPerAddress {
                state.statistics.refusedForAddress += 1
                return refusals.address
            }
            state.perAddress[client] = held + 1
            state.pending[socket] = Tenant(socket: socket, address: client, accepted: .now)
            return nil
        }
        if let refusal {
            Self.refuse(socket, refusal)
            return
        }
        var address = address
        let added = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { MHD_add_connection(daemon, socket, $0, length) }
        }
        if added != cmhd_yes {
            // libmicrohttpd closed the socket.
            state.withLock { state in
                if let tenant = state.pending.removeValue(forKey: socket) { Self.release(tenant.address, &state) }
            }
        }
    }

    private static func release(_ address: ClientAddress, _ state: inout State) {
        let held = state.perAddress[address, default: 1] - 1
        state.perAddress[address] = held > 0 ? held : nil
    }

    /// Answers a connection over a limit and closes it, without waiting on it: the response fits in the socket's
    /// send buffer; what the client sent already is read and dropped first, so that the close is a FIN rather
    /// than a reset that could overtake the answer.
    private static func refuse(_ socket: Int32, _ response: [UInt8]) {
        _ = response.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
        shutdown(socket, Int32(SHUT_WR))
        var scratch = [UInt8](repeating: 0, count: 4096)
        _ = recv(socket, &scratch, scratch.count, Int32(MSG_DONTWAIT))
        close(socket)
    }

    private static func refusal(_ message: String) -> [UInt8] {
        guard case .bytes(let body) = HTTPResponse.error(503, .tooManyConnections, message).body else { return [] }
        let head =
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n"
            + "Retry-After: 1\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + body
    }

    /// Of the connections still reading a head or a body, those whose client has ended its sending side and whose
    /// every byte has been read (by libmicrohttpd): one batched `poll` for POLLRDHUP, then a `recv` peek of each that
    /// has it (0: the end, nothing unread), without the gate's lock, which libmicrohttpd's thread takes for every
    /// request (a `poll` per connection under it cost about 1 us each: 7-10 ms a look at 9,000 connections).
    private func endedSending() -> Set<ObjectIdentifier> {
        let reading = state.withLock { state in
            state.active.values.filter { tenant in
                if tenant.cut { return false }
                if case .working = tenant.phase { return false }
                return true
            }
        }
        guard !reading.isEmpty else { return [] }
        var descriptors = reading.map { pollfd(fd: $0.socket, events: Self.pollReadHangUp, revents: 0) }
        guard poll(&descriptors, nfds_t(descriptors.count), 0) > 0 else { return [] }
        var ended: Set<ObjectIdentifier> = []
        var byte: UInt8 = 0
        for (tenant, descriptor) in zip(reading, descriptors)
        where descriptor.revents & (Self.pollReadHangUp | Int16(POLLHUP)) != 0 {
            // A socket still open (its tenant is active until libmicrohttpd's closed notice, which comes before the
            // close): bytes still unread mean libmicrohttpd has not read it all yet, however late its thread is.
            if recv(tenant.socket, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) == 0 {
                ended.insert(ObjectIdentifier(tenant))
            }
        }
        return ended
    }

    /// Linux's POLLRDHUP (0x2000 on every architecture), which Glibc's module leaves out (it needs _GNU_SOURCE).
    private static let pollReadHangUp: Int16 = 0x2000

    /// Cuts the connections whose request is late: a head not in within the header timeout of the connection's
    /// start (or, after a response, within the idle timeout plus the header timeout: the idle timeout is the
    /// client's to wait before its next request), or a body that brought less than the minimum rate over the last
    /// window of a header timeout; and those whose client ended its sending side with its request incomplete.
    private func look(_ now: ContinuousClock.Instant) {
        let ended = endedSending()
        state.withLock { state in
            for tenant in state.active.values where !tenant.cut {
                // A client that ended its sending side (FIN) with its head or body incomplete sends no more of it.
                // libmicrohttpd 0.9.75 (epoll, edge-triggered) misses that end when it comes with the last bytes, and
                // the request held its connection and its slot until its time bound (a head, part of a body and the
                // FIN in one burst: 10.3 s). Cut once two looks in a row found it ended, every byte read, with nothing
                // more received between them, so that a request libmicrohttpd is still reading is never cut.
                if case .working = tenant.phase {
                    tenant.endedAt = nil
                } else if ended.contains(ObjectIdentifier(tenant)) {
                    guard tenant.endedAt == tenant.bodyBytes else {
                        tenant.endedAt = tenant.bodyBytes
                        continue
                    }
                    if case .head = tenant.phase {
                        state.statistics.cutHeads += 1
                    } else {
                        state.statistics.cutBodies += 1
                    }
                    tenant.cut = true
                    shutdown(tenant.socket, Int32(SHUT_RDWR))
                    continue
                } else {
                    tenant.endedAt = nil
                }
                switch tenant.phase {
                case .head(let since, let first):
                    let bound = first ? policy.headerTimeout : policy.idleTimeout + policy.headerTimeout
                    guard now - since > bound else { continue }
                    state.statistics.cutHeads += 1
                case .body(let since):
                    guard policy.minimumBodyRate > 0 else { continue }
                    let window = tenant.window ?? (since, 0)
                    let elapsed = now - window.start
                    guard elapsed >= policy.headerTimeout else { continue }
                    let expected = Double(policy.minimumBodyRate) * elapsed.inSeconds
                    guard Double(tenant.bodyBytes - window.bytes) < expected else {
                        tenant.window = (now, tenant.bodyBytes)
                        continue
                    }
                    state.statistics.cutBodies += 1
                case .working:
                    continue
                }
                tenant.cut = true
                shutdown(tenant.socket, Int32(SHUT_RDWR))
            }
        }
    }
}
