internal import CCurl
import Dispatch
import RichPushCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The thread that drives one curl multi handle: it adds transfers on request (each once its origin has room, and
/// an https origin's others once its first has a response, so that they resume its TLS session: `AdmissionQueue`)
/// and cancels them, runs `curl_multi_perform`, settles finished transfers, and sleeps in
/// `curl_multi_poll` until a socket, a timer or `curl_multi_wakeup` needs it.
///
/// Other threads talk to it only through `submit`, `cancel`, `stop` and `census` (for tests), which queue a command
/// under a lock and wake the loop when they find the inbox empty (`CommandInbox`). Everything else (the multi
/// handle, every easy handle) is touched on this thread. Nothing slow runs on it: a body's first bytes go to the
/// `BodySniffer`, which decides at once the heads it can judge quickly (a common image's), within
/// `sniffingAtOnce` a turn (`SniffingTime`), and whose verdict on the others comes back as a command.
///
/// `curl_multi_socket_action` over epoll was measured in its place (issue 26) and dropped: the `poll`s a payload
/// costs are libcurl's own checks after each `recv`, which it makes either way, and driving curl one ready socket
/// at a time cost this thread more than one `curl_multi_perform` for all of them (docs/performance.md).
package final class FetchLoop: @unchecked Sendable {
    package typealias Completion = @Sendable (TransferOutcome) -> Void

    private enum Command {
        case start(id: UInt64, TransferRequest, Completion)
        case cancel(id: UInt64, FetchFailure)
        case sniffed(id: UInt64, SniffVerdict)
        case census(@Sendable (Census) -> Void)
        case stop
    }

    /// How many transfers the loop holds, by whether they have an easy handle, and how many handles it has made:
    /// what a transfer waiting for admission costs, for tests.
    package struct Census: Sendable, Equatable {
        /// Transfers with an easy handle: in the multi handle, or between two hops.
        package var withHandle: Int
        /// Transfers waiting in the admission queue for their first hop, without an easy handle.
        package var waiting: Int
        /// Easy handles made since the loop began (`curl_easy_init`), reused ones not counted again.
        package var handlesMade: Int
        /// Easy handles reset and kept for the next transfers.
        package var idleHandles: Int
    }

    /// A transfer waiting in `admission` for its first hop: what it takes to begin it once admitted. It has no easy
    /// handle until then, nor options, callbacks, buffers or file: with 1,000 payloads to one origin that takes 16
    /// at a time, 984 wait. Made and configured ahead, their handles (with `fetch`'s larger frames and settings)
    /// cost ~14 KB of peak RSS a reference (`stream` over the bench's slow.ndjson: 59 MB, now 45 MB).
    private struct Waiting {
        let request: TransferRequest
        let completion: Completion
    }

    private struct Inbox {
        var commands = CommandInbox<Command>()
        var stopped = false
        /// Whether the thread has ended; then `waiters` have been called.
        var ended = false
        /// Who waits for the thread to end.
        var waiters: [@Sendable () -> Void] = []
    }

    private let multi = MultiHandle()
    /// Where every transfer of the loop keeps its TLS sessions (`ShareHandle`).
    private let sessions = ShareHandle()
    /// The sockets of the loop's connections, by their ends (touched on the loop thread only).
    private let connections = ConnectionSockets()
    /// The settings of transfers that bring none of their own, and the loop's connection bounds.
    package let settings: FetchSettings
    private let inbox = LockedValue(Inbox())
    private let sniffs: any BodySniffer
    /// How much of the bodies being received is held in memory until complete rather than written as it arrives.
    package let bodyMemory: BodyMemory
    /// The id of the next transfer started through `fetch(_:)`.
    private let nextID = Atomic<UInt64>(1)
    // Touched on the loop thread only.
    private var transfers: [UInt64: Transfer] = [:]
    /// The transfers waiting for admission before their first hop (a later hop waits with its handle:
    /// `Transfer.queued`).
    private var waiting: [UInt64: Waiting] = [:]
    private var byHandle: [UnsafeMutableRawPointer: UInt64] = [:]
    private var deadlines = DeadlineQueue()
    /// Which transfers wait for room in their origin, or for their https origin's first response, before going
    /// into the multi handle.
    private var admission: AdmissionQueue
    /// The pilots of gated origins whose connection is made over HTTP/1.x and whose TLS session is not yet one another
    /// connection can resume (TLS 1.3 before the server's ticket is read), each with its origin and when it connected:
    /// looked at every turn, the origin proven once the ticket is in or `ticketWait` has passed.
    private var awaitingTicket: [UInt64: (origin: String, connected: ContinuousClock.Instant)] = [:]
    /// How long a pilot's ticket is waited for once its connection is made, before its origin is proven without it
    /// (its waiters then open connections of their own with full handshakes, as without the gate): a second, far
    /// more than a ticket takes (it comes one round trip after the handshake), and short against a push's deadline.
    /// A server that sends no ticket (TLS 1.3 with tickets off) costs its origin's other transfers at most this, or
    /// the pilot's response head when that comes first.
    static let ticketWait = Duration.seconds(1)
    /// Easy handles of finished transfers, reset and ready for the next ones (at most one per connection).
    private var idleHandles: [EasyHandle] = []
    /// How many easy handles the loop has made (`Census`).
    private var handlesMade = 0
    /// How long the thread may spend a turn deciding bodies' types at once, and how long it has this turn.
    private var sniffing: SniffingTime

    /// The default of `sniffingAtOnce`: 1 ms a turn. A check at once costs about 8 us for a real JPEG, and at most
    /// 0.7 ms measured for any head the sniffer takes at once (`SniffService.sniff(_:atOnce:completion:)`: libmagic's
    /// quick questions only; a search for hostile heads found none slower than 0.43 ms), so a turn's transfers wait
    /// for it at most the allowance and one check however many heads arrive together; the heads past it go to the
    /// sniffer's thread. Deciding at once saves the two thread hand-offs a body (loop to sniffer, verdict back): (h)
    /// over HTTP/2, alternated pairs, in docs/performance.md.
    package static let defaultSniffingAtOnce = Duration.milliseconds(1)

    /// A loop whose transfers follow `settings`, their bodies' types decided by `sniffer` (stopped with the loop;
    /// at once on the loop's thread for at most `sniffingAtOnce` a turn, `.zero` for never), bodies held in memory
    /// until complete as its `limits.heldBodyBytes` and `limits.heldBytes` allow, for every transfer on it (a
    /// tenant's too).
    package init(
        settings: FetchSettings, sniffer: any BodySniffer, sniffingAtOnce: Duration = FetchLoop.defaultSniffingAtOnce
    ) {
        Self.initializeCurl
        self.settings = settings
        self.sniffs = sniffer
        sniffing = SniffingTime(allowance: sniffingAtOnce)
        bodyMemory = BodyMemory(bodyBytes: settings.limits.heldBodyBytes, totalBytes: settings.limits.heldBytes)
        // As many per origin as curl may connect at once: more in curl would only wait in its queue.
        admission = AdmissionQueue(limit: settings.network.maximumConnectionsPerHost)
        multi.set(CURLMOPT_MAX_TOTAL_CONNECTIONS, settings.network.maximumConnections)
        multi.set(CURLMOPT_MAX_HOST_CONNECTIONS, settings.network.maximumConnectionsPerHost)
        // Keep every connection we may reuse: the cache defaults to 4 x the number of handles added.
        multi.set(CURLMOPT_MAXCONNECTS, settings.network.maximumConnections)
        startDedicatedThread(named: "rp-fetch-loop") { [self] in run() }
    }

    /// Gives this thread (the loop's, where curl converts a host name that is not ASCII to its punycode form, with
    /// libidn2) a locale whose characters are UTF-8, `C.UTF-8` for `LC_CTYPE` only (`uselocale`: this thread alone,
    /// nothing else in the process changes). libidn2 reads the name in the locale's encoding, and a process that never
    /// calls `setlocale` runs in "C", ASCII: `https://bücher.example/` failed as `bad-url` ("URL using bad/illegal
    /// format"), though the curl tool, which sets the locale from the environment, fetches it. Without C.UTF-8
    /// (glibc has had it built in since 2.35), such names stay refused.
    private static func readHostNamesAsUTF8() {
        if let locale = utf8HostNames { uselocale(locale) }
    }

    /// The locale `readHostNamesAsUTF8` gives, made once for every loop (a loop per engine: one made per loop was
    /// never freed). Immutable once made, so shared by the loops' threads.
    private nonisolated(unsafe) static let utf8HostNames = newlocale(LC_CTYPE_MASK, "C.UTF-8", nil)

    private static let initializeCurl: Void = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
    }()

    // MARK: - The async bridge

    /// Runs `request` to its end: refused at once when its URL fails the checks (`URLCheck`), else a transfer on
    /// the loop. Cancelling the calling task cancels the transfer (code `cancelled`) and removes its partial file
    /// before this returns.
    package func fetch(_ request: TransferRequest) async -> TransferOutcome {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        let registration = LockedValue(RegistrationState())
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                register(id: id, request, registration, continuation)
            }
        } onCancel: {
            if registration.withLock({ $0.cancel() }) == .cancelTransfer {
                cancel(id: id, reason: Self.cancelled)
            }
        }
    }

    /// Hands transfer `id` to the loop, whose completion resumes `continuation`; resumes it at once when the URL
    /// fails the checks (`URLCheck`) or the task was cancelled first.
    ///
    /// Not async, and never inlined: what it builds (a refusal's outcome, 209 bytes; copies of the settings the check
    /// reads) then lives on the thread's stack for the call, not in the frame of every `fetch` suspended until its
    /// transfer ends (with this work inlined, and `FetchSettings` inline, the frames of `fetch` and of its closure
    /// were 2,704 and 1,088 bytes; now 384 and 144).
    @inline(never)
    private func register(
        id: UInt64, _ request: TransferRequest, _ registration: LockedValue<RegistrationState>,
        _ continuation: CheckedContinuation<TransferOutcome, Never>
    ) {
        if let refusal = (request.settings ?? settings).urlCheck.check(request.url) {
            return continuation.resume(returning: .failed(refusal))
        }
        switch registration.withLock({ $0.register() }) {
        case .start:
            submit(id: id, request) { continuation.resume(returning: $0) }
        case .finishCancelled:
            continuation.resume(returning: .failed(Self.cancelled))
        }
    }

    private static let cancelled = FetchFailure(.cancelled, "cancelled before the transfer finished")

    // MARK: - Commands from any thread

    /// Starts a transfer; `completion` is called exactly once, on the loop thread.
    func submit(id: UInt64, _ request: TransferRequest, completion: @escaping Completion) {
        if !post(.start(id: id, request, completion)) {
            completion(.failed(FetchFailure(.cancelled, "the fetcher has shut down")))
        }
    }

    /// Queues `command` for the loop, waking it when the inbox was empty; false when the loop has stopped (nothing
    /// queued: the caller answers for it).
    private func post(_ command: Command) -> Bool {
        let posted = inbox.withLock { inbox -> Bool? in
            guard !inbox.stopped else { return nil }
            return inbox.commands.post(command)
        }
        guard let wake = posted else { return false }
        if wake { multi.wakeup() }
        return true
    }

    /// Cancels a transfer started with `submit`; its completion receives `reason`. Ignored when it has finished.
    func cancel(id: UInt64, reason: FetchFailure) {
        if inbox.withLock({ $0.commands.post(.cancel(id: id, reason)) }) { multi.wakeup() }
    }

    /// What the loop holds now (nil once it has stopped): answered on the loop thread, between two iterations.
    package func census() async -> Census? {
        await withCheckedContinuation { continuation in
            if !post(.census { continuation.resume(returning: $0) }) { continuation.resume(returning: nil) }
        }
    }

    /// Hands a sniffing verdict to the loop.
    private func deliver(id: UInt64, _ verdict: SniffVerdict) {
        if inbox.withLock({ $0.commands.post(.sniffed(id: id, verdict)) }) { multi.wakeup() }
    }

    /// Cancels every transfer and ends the thread; `done` is called once it has ended (at once if it has).
    package func stop(then done: @escaping @Sendable () -> Void) {
        let (ended, wake) = inbox.withLock { inbox -> (Bool, Bool) in
            if inbox.ended { return (true, false) }
            inbox.waiters.append(done)
            defer { inbox.stopped = true }
            return (false, !inbox.stopped && inbox.commands.post(.stop))
        }
        if ended { done() } else if wake { multi.wakeup() }
    }

    /// Cancels every transfer and ends the thread, suspending until it has ended.
    package func stop() async {
        await withCheckedContinuation { continuation in stop { continuation.resume() } }
    }

    /// Cancels every transfer and ends the thread, blocking the calling thread until it has ended.
    package func stopAndWait() {
        let ended = DispatchSemaphore(value: 0)
        stop { ended.signal() }
        ended.wait()
    }

    // MARK: - The loop thread

    private func run() {
        Self.readHostNamesAsUTF8()
        while true {
            sniffing.newTurn()
            let commands = inbox.withLock { $0.commands.takeAll() }
            for command in commands {
                switch command {
                case .start(let id, let request, let completion): start(id: id, request, completion)
                case .cancel(let id, let reason): settle(id: id, with: .failed(reason))
                case .sniffed(let id, let verdict):
                    if let outcome = transfers[id]?.decide(verdict) { settle(id: id, with: outcome) }
                case .census(let answer):
                    answer(
                        Census(
                            withHandle: transfers.count, waiting: waiting.count, handlesMade: handlesMade,
                            idleHandles: idleHandles.count))
                case .stop:
                    for id in Array(transfers.keys) + Array(waiting.keys) {
                        settle(id: id, with: .failed(FetchFailure(.cancelled, "the fetcher has shut down")))
                    }
                    sniffs.stop()
                    settings.spares.stop()
                    for waiter in inbox.withLock({ inbox in
                        inbox.ended = true
                        return inbox.waiters
                    }) {
                        waiter()
                    }
                    return
                }
            }
            expireDue()
            multi.perform()
            for (easy, code) in multi.finished() {
                guard let id = byHandle[easy], let transfer = transfers[id] else { continue }
                detach(id: id, transfer, curlEnded: true)
                switch transfer.curlFinished(code) {
                case .settle(let outcome): settle(id: id, with: outcome)
                case .awaitType: break
                case .follow(let url): next(id: id, transfer) { () throws(CurlOptionError) in try transfer.follow(url) }
                case .retry:
                    next(id: id, transfer) { () throws(CurlOptionError) in try transfer.retryOnNewConnection() }
                }
            }
            if !awaitingTicket.isEmpty { lookForTickets() }
            // The handles of transfers settled so far are ready for those admitted now.
            recycleHandles()
            for id in admission.admitted({ waiting[$0] != nil || transfers[$0]?.queued == true }) {
                if let first = waiting.removeValue(forKey: id) {
                    begin(id: id, first.request, first.completion)
                } else if let transfer = transfers[id] {
                    transfer.queued = false
                    attach(id: id, transfer)
                }
            }
            // curl's timer and the next deadline say when the loop must run again; a second is the longest
            // it sleeps without a reason. An origin given room after `admitted` (curl refused a handle) must not
            // wait for either.
            var wait = min(multi.timeout() ?? 1000, 1000)
            if let next = deadlines.next {
                wait = min(wait, max(0, (next - .now).inMilliseconds + 1))
            }
            if !awaitingTicket.isEmpty, let first = awaitingTicket.values.lazy.map(\.connected).min() {
                wait = min(wait, max(0, (first + Self.ticketWait - .now).inMilliseconds + 1))
            }
            if admission.hasRoom { wait = 0 }
            if wait > 0 { multi.poll(milliseconds: wait) }
        }
    }

    /// Ends every transfer whose deadline has passed, here rather than in curl: a transfer still waiting for a
    /// connection slot (CURLMOPT_MAX_TOTAL_CONNECTIONS) would otherwise be expired by curl only after it got a
    /// slot and started connecting, one after another, which made the last of 1,000 expire 150 ms late.
    private func expireDue() {
        for id in deadlines.popDue(.now) {
            // One still waiting for admission has received nothing.
            guard let bytes = transfers[id]?.bytes ?? (waiting[id] != nil ? 0 : nil) else { continue }
            settle(id: id, with: .failed(FetchFailure(.expired, "the deadline came first (\(bytes) bytes received)")))
        }
        // Transfers that finished early leave their entries behind; keep the heap within 4x the live ones.
        if deadlines.count > 1024, deadlines.count > 4 * (transfers.count + waiting.count) {
            deadlines.compact(
                keeping: transfers.map { ($0.value.request.deadline, $0.key) }
                    + waiting.map { ($0.value.request.deadline, $0.key) })
        }
    }

    /// Takes a new transfer: it begins at once if its origin has room (`AdmissionQueue`), else waits as a request
    /// alone (`Waiting`), its easy handle made only once it is admitted (`begin`).
    private func start(id: UInt64, _ request: TransferRequest, _ completion: @escaping Completion) {
        guard request.deadline > .now else {
            completion(.failed(.deadlinePassedBeforeStart))
            return
        }
        deadlines.insert(request.deadline, id: id)
        if admission.request(id, origin: AdmissionQueue.origin(of: request.url)) {
            begin(id: id, request, completion)
        } else {
            waiting[id] = Waiting(request: request, completion: completion)
        }
    }

    /// Begins admitted transfer `id`: its easy handle (an idle one when there is one), options and callbacks, then
    /// into the multi handle. Settles it when curl refuses an option.
    private func begin(id: UInt64, _ request: TransferRequest, _ completion: @escaping Completion) {
        let transfer = Transfer(
            request: request, easy: idleHandles.popLast() ?? makeHandle(), settings: request.settings ?? settings,
            connections: connections, memory: bodyMemory,
            requestSniff: { [weak self] head in self?.sniff(id: id, head) },
            didStart: { [weak self] origin in self?.started(id: id, origin: origin) },
            didAnswer: { [weak self] origin, multiplexed in
                self?.admission.proved(origin: origin, multiplexed: multiplexed)
            },
            completion: completion)
        transfers[id] = transfer
        do {
            try transfer.easy.use(sessions)
            try transfer.configure()
        } catch {
            refuse(id: id, transfer, FetchFailure(.network, error.detail))
            return
        }
        attach(id: id, transfer)
    }

    /// The verdict on transfer `id`'s first bytes when the sniffer reached it at once within this turn's time for
    /// that; else nil, and the head goes to the sniffer, whose verdict comes back as a command.
    private func sniff(id: UInt64, _ head: [UInt8]) -> SniffVerdict? {
        sniffing.spend { atOnce in
            sniffs.sniff(head, atOnce: atOnce) { [weak self] verdict in self?.deliver(id: id, verdict) }
        }
    }

    /// A new easy handle (curl_easy_init), counted for `Census`.
    private func makeHandle() -> EasyHandle {
        handlesMade += 1
        return EasyHandle()
    }

    /// A hop of transfer `id` has its connection (curl's pre-request callback): the next of its origin may go in.
    /// The pilot of a gated origin whose connection agreed on HTTP/2 proves it now, not at its first response: the
    /// waiters multiplex on that connection (PIPEWAIT), so none opens a connection that could want the session ticket.
    /// Over HTTP/1.x it proves it as soon as its session can be resumed (TLS 1.2: at once; TLS 1.3: once the ticket
    /// the server sends after the handshake is read), which `lookForTickets` sees later in this turn of the loop or in
    /// a later one, not at its response head: a first response slow to start (a CDN's cache miss) held every other
    /// transfer of its origin, which expired unstarted when it was slower than their deadlines (a helper's probe: 30
    /// payloads with 3 s deadlines behind a first response held 4 s).
    private func started(id: UInt64, origin: String) {
        admission.release(origin: origin)
        guard admission.isGated(origin), let easy = transfers[id]?.easy else { return }
        if easy.agreedHTTP2 {
            admission.proved(origin: origin, multiplexed: true)
        } else if awaitingTicket[id]?.origin != origin {
            // A redirect within the origin keeps the first connection's time: the wait is bounded from it.
            awaitingTicket[id] = (origin, .now)
        }
    }

    /// Proves the origin of each pilot in `awaitingTicket` whose session has become resumable (its ticket read while
    /// curl waited for the response), or whose `ticketWait` has passed; forgets those that left, went elsewhere (a
    /// redirect) or whose origin was proven otherwise (their response head).
    private func lookForTickets() {
        let now = ContinuousClock.now
        for (id, pilot) in awaitingTicket {
            guard admission.isGated(pilot.origin), let transfer = transfers[id], transfer.origin == pilot.origin else {
                awaitingTicket[id] = nil
                continue
            }
            if transfer.easy.sessionResumable || now - pilot.connected >= Self.ticketWait {
                admission.proved(origin: pilot.origin, multiplexed: false)
                awaitingTicket[id] = nil
            }
        }
    }

    /// Makes the transfer's next request on its handle (a redirect's, or the same again on a new connection) once
    /// `ready` has readied the handle for it.
    private func next(id: UInt64, _ transfer: Transfer, ready: () throws(CurlOptionError) -> Void) {
        do {
            try ready()
        } catch {
            settle(id: id, with: .failed(FetchFailure(.network, error.detail)))
            return
        }
        admit(id: id, transfer)
    }

    /// Adds the transfer's handle to the multi handle if its origin has room (and, for an https origin not yet
    /// proven, no transfer of it is in: `AdmissionQueue`), else queues it until it has.
    private func admit(id: UInt64, _ transfer: Transfer) {
        if admission.request(id, origin: transfer.origin) {
            attach(id: id, transfer)
        } else {
            transfer.queued = true
        }
    }

    /// Adds the admitted transfer's handle to the multi handle, waiting for a connection that may multiplex as
    /// its origin says (CURLOPT_PIPEWAIT: `AdmissionQueue.pipeWait(for:)`); settles the transfer when curl refuses it.
    private func attach(id: UInt64, _ transfer: Transfer) {
        // CURLOPT_PIPEWAIT takes any long: curl_easy_setopt fails only for an unknown option.
        try? transfer.easy.set(CURLOPT_PIPEWAIT, admission.pipeWait(for: transfer.origin) ? 1 : 0)
        guard multi.add(transfer.easy) else {
            refuse(id: id, transfer, FetchFailure(.network, "curl_multi_add_handle failed"))
            return
        }
        transfer.attached = true
        byHandle[transfer.easy.raw] = id
    }

    /// Settles admitted transfer `id`, which curl refused before it went into the multi handle (an option, the
    /// handle itself), with `failure`: its origin's room, and the gate if it was the pilot, pass to the next waiter
    /// (not the origin's failure). `detach` does this for a transfer that was in the multi handle.
    private func refuse(id: UInt64, _ transfer: Transfer, _ failure: FetchFailure) {
        admission.release(origin: transfer.origin)
        admission.left(id, origin: transfer.origin, curlEnded: false)
        settle(id: id, with: .failed(failure))
    }

    /// Takes the transfer's handle out of the multi handle, if it is in; one that had not started makes room
    /// for the next of its origin, and the pilot of an unproven origin hands its gate on (`curlEnded`: curl
    /// finished it, rather than the loop cancelling or expiring it; `AdmissionQueue.left(_:origin:curlEnded:)`).
    private func detach(id: UInt64, _ transfer: Transfer, curlEnded: Bool) {
        guard transfer.attached else { return }
        multi.remove(transfer.easy)
        byHandle[transfer.easy.raw] = nil
        transfer.attached = false
        if !transfer.started { admission.release(origin: transfer.origin) }
        admission.left(id, origin: transfer.origin, curlEnded: curlEnded)
    }

    /// Ends a transfer with this outcome: out of the multi handle and the registry, its handle to the idle
    /// pool before the next admissions. One still waiting for admission has no handle and no file: it is told, and
    /// skipped when its origin's queue reaches it. Ignored when it has already settled.
    private func settle(id: UInt64, with outcome: TransferOutcome) {
        guard let transfer = transfers.removeValue(forKey: id) else {
            waiting.removeValue(forKey: id)?.completion(outcome)
            return
        }
        detach(id: id, transfer, curlEnded: false)
        recycle.append(transfer.easy)
        transfer.finish(with: outcome)
    }

    /// Handles of settled transfers; reset and pooled after curl's finished transfers have been read, before the
    /// waiting ones are admitted.
    private var recycle: [EasyHandle] = []

    private func recycleHandles() {
        for easy in recycle where idleHandles.count < settings.network.maximumConnections {
            easy.reset()
            idleHandles.append(easy)
        }
        recycle.removeAll(keepingCapacity: true)
    }
}
