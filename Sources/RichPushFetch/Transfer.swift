internal import CCurl
import RichPushCore
import RichPushStore

#if canImport(Glibc)
    import Glibc
#endif

/// One transfer in the loop: its easy handle, its partial file and the state of its responses and type. Lives on
/// the loop's thread only; the loop's registry keeps it alive while curl may call back into it.
///
/// This is the driver, as corelibs-foundation's `_EasyHandle` forwards curl's callbacks to a delegate: it turns
/// curl's callbacks and results into values and does what the decisions return, each a type of its own tested
/// without a socket. `TransferOptions` are the options set on the handle; `ConnectionPolicy` judges every
/// connection; `ResponseHead` reads the headers and judges a response by its status; `RedirectPolicy` follows
/// redirects here rather than in curl, each hop's Location through the same `URLCheck` as the first URL (the
/// loop re-adds the handle for it); `SniffState` settles the type against curl's end (the `BodySniffer` decides
/// it: at once, as the first bytes are handed over, for a common image's head; else off the loop, the transfer
/// going on receiving until the loop delivers the verdict with `decide(_:)`); `CurlFailure` says what curl's
/// result code means; `MediaBody` takes the body's bytes.
final class Transfer {
    /// What the loop must do once curl has finished with the handle.
    enum Step {
        /// Settle with this outcome.
        case settle(TransferOutcome)
        /// Wait for the type's verdict (`decide(_:)` then gives the outcome).
        case awaitType
        /// Make the next request, to this URL (already checked), on the same handle.
        case follow(String)
        /// Make the same request again on a new connection: the reused one had bytes waiting before the request
        /// went out, or its answer was no HTTP (`retryOnNewConnection()`).
        case retry
    }

    let request: TransferRequest
    let easy: EasyHandle
    /// Whether `easy` is in the multi handle; kept by the loop.
    var attached = false
    /// Whether a later hop of the transfer (a redirect's, a retry's) waits in the loop's `AdmissionQueue` to be put
    /// into the multi handle, with its handle; kept by the loop. (A first hop waits without a transfer at all:
    /// `FetchLoop.Waiting`.)
    var queued = false
    /// The origin of the current hop's URL (`AdmissionQueue.origin(of:)`).
    private(set) var origin: String
    /// The current hop's URL.
    private var url: String
    /// Whether the current hop has a connection (curl asked to send its request on one).
    private(set) var started = false
    private let settings: FetchSettings
    private let policy: ConnectionPolicy
    /// The loop's record of its connections' sockets, for the check of a reused connection.
    private let connections: ConnectionSockets
    /// The sockets opened for the current hop (CURLOPT_OPENSOCKETFUNCTION): none when curl reuses a connection.
    private var opened: [curl_socket_t] = []
    /// Whether the current hop was stopped before its request because its reused connection had bytes waiting.
    private var uncleanConnection = false
    /// Whether the current hop is already the retry of one stopped so: it is made on a new connection.
    private var onNewConnection = false
    private let requestSniff: ([UInt8]) -> SniffVerdict?
    private let didStart: (String) -> Void
    private let didAnswer: (String, Bool) -> Void
    /// Whether the current hop's response has begun (curl handed over its first header line).
    private var answered = false
    private var completion: ((TransferOutcome) -> Void)?

    /// What happens to the body's bytes: cap, memory or file, first bytes for the sniffer.
    private let body: MediaBody
    /// Body bytes received so far.
    var bytes: Int { body.bytes }
    private var sniffing = SniffState()
    private var head: ResponseHead
    private var redirects: RedirectPolicy
    /// Why a callback stopped the transfer; reported instead of curl's generic abort code.
    private var abortReason: FetchFailure?
    /// Whether a probe stopped the transfer because its first bytes were in (its verdict then decides the outcome).
    private var probeEnded = false
    /// What the connection policy refused on this hop, for when curl then fails to connect.
    private var refusals = ConnectionPolicy.Refusals()

    /// A transfer; `requestSniff` hands the first bytes to the sniffing service and returns the verdict when it
    /// was reached at once (else it comes back through `decide(_:)`); `didStart` is told the hop's origin when a
    /// hop gets its connection, `didAnswer` when a hop's response begins (over TLS, its connection's session is in
    /// the share by then: `AdmissionQueue`), and whether it came over HTTP/2 or later.
    init(
        request: TransferRequest, easy: EasyHandle, settings: FetchSettings, connections: ConnectionSockets,
        memory: BodyMemory,
        requestSniff: @escaping ([UInt8]) -> SniffVerdict?,
        didStart: @escaping (String) -> Void,
        didAnswer: @escaping (String, Bool) -> Void,
        completion: @escaping (TransferOutcome) -> Void
    ) {
        self.request = request
        self.easy = easy
        self.settings = settings
        self.connections = connections
        policy = ConnectionPolicy(network: settings.network)
        head = ResponseHead(maximumBytes: settings.limits.maximumHeaderBytes)
        redirects = RedirectPolicy(maximum: settings.network.maximumRedirects, urlCheck: settings.urlCheck)
        self.requestSniff = requestSniff
        self.didStart = didStart
        self.didAnswer = didAnswer
        self.origin = AdmissionQueue.origin(of: request.url)
        self.url = request.url
        self.completion = completion
        let spares = settings.spares
        body = MediaBody(
            caps: settings.caps, sniffBytes: settings.limits.sniffBytes,
            storage: request.probe ? nil : { () throws(StoreError) in try spares.take() }, memory: memory,
            probeBytes: request.probeBytes)
    }

    static func from(_ userdata: UnsafeMutableRawPointer?) -> Transfer {
        Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
    }

    /// Sets every option on the easy handle, and the callbacks into this transfer.
    func configure() throws(CurlOptionError) {
        try easy.apply(
            TransferOptions(request: request, settings: settings),
            hop: TransferOptions.Hop(url: request.url, deadline: request.deadline, now: .now))
        let context = Unmanaged.passUnretained(self).toOpaque()
        try easy.setWriteFunction { data, size, count, userdata in
            Transfer.from(userdata).receive(data, size * count)
        }
        try easy.set(CURLOPT_WRITEDATA, pointer: context)
        try easy.setHeaderFunction { data, size, count, userdata in
            Transfer.from(userdata).receiveHeader(data, size * count)
        }
        try easy.set(CURLOPT_HEADERDATA, pointer: context)
        try easy.setOpenSocketFunction { userdata, _, address in
            Transfer.from(userdata).openSocket(address!)
        }
        try easy.set(CURLOPT_OPENSOCKETDATA, pointer: context)
        try easy.setPrereqFunction { userdata, primaryIP, localIP, primaryPort, localPort in
            Transfer.from(userdata).approveConnection(
                primaryIP.map { String(cString: $0) }, port: Int(primaryPort),
                local: localIP.map { String(cString: $0) }, localPort: Int(localPort))
        }
        try easy.set(CURLOPT_PREREQDATA, pointer: context)
    }

    /// Readies the handle for the next hop of a redirect (the loop re-adds it to the multi handle).
    func follow(_ url: String) throws(CurlOptionError) {
        try beginHop(url, newConnection: false)
    }

    /// Readies the handle to make the current hop's request again, on a new connection (CURLOPT_FRESH_CONNECT): curl
    /// chose a connection with bytes waiting, which it closed when the pre-request callback refused it (nothing had
    /// been sent on it), or the request went out on a reused connection whose answer began with bytes that are no
    /// HTTP (`isSpoiltAnswer(_:)`). The loop re-adds the handle.
    func retryOnNewConnection() throws(CurlOptionError) {
        try beginHop(url, newConnection: true)
    }

    private func beginHop(_ url: String, newConnection: Bool) throws(CurlOptionError) {
        head.forgetResponse()
        refusals = ConnectionPolicy.Refusals()
        origin = AdmissionQueue.origin(of: url)
        self.url = url
        started = false
        answered = false
        opened = []
        uncleanConnection = false
        onNewConnection = newConnection
        try easy.apply(
            TransferOptions.Hop(url: url, deadline: request.deadline, now: .now, newConnection: newConnection))
    }

    // MARK: - Callbacks (on the loop thread, inside curl_multi_perform)

    private func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        var raw = [UInt8](repeating: 0, count: 16)
        let count = Int(ccurl_sockaddr_address(address, &raw))
        let ip = IPAddress(bytes: Array(raw.prefix(count)))
        if let refusal = policy.refusal(opening: ip, port: Int(ccurl_sockaddr_port(address))) {
            refusals.record(refusal)
            return ccurl_socket_bad()
        }
        let socket = ccurl_sockaddr_open(address)
        if socket != ccurl_socket_bad() { opened.append(socket) }
        return socket
    }

    /// Judges the address and port of every connection about to carry a request, reused ones included, and a
    /// reused one's state (`isUnclean(_:)`); `local` and `localPort` are its own end.
    private func approveConnection(_ primaryIP: String?, port: Int, local: String?, localPort: Int) -> Int32 {
        if let refusal = policy.refusal(requestingOn: primaryIP, port: port) {
            refusals.record(refusal)
            return ccurl_prereq_abort()
        }
        if let primaryIP, let local,
            isUnclean(ConnectionSockets.Ends(local: local, localPort: localPort, remote: primaryIP, remotePort: port))
        {
            uncleanConnection = true
            return ccurl_prereq_abort()
        }
        if !started {
            started = true
            didStart(origin)
        }
        return ccurl_prereq_ok()
    }

    /// Whether the connection with `ends`, about to carry this hop's request, is a reused HTTP/1.x one with bytes
    /// waiting (`ccurl_easy_input_waiting`): an origin that sent more than a response's Content-Length left the rest
    /// on it, and the next response would be read from those bytes (bad-response). libcurl 7.88 reuses such a
    /// connection: its check of an idle one (`extract_if_dead`, the socket filter's `is_alive`) judges it dead only
    /// when a peek reads the peer's FIN, and takes waiting bytes for a live connection; it notices bytes beyond the
    /// length only when they came in the read that ended the body, and it reads no further than the length. (curl
    /// 8.0.0 refuses a connection with input waiting: commit 7c5637b, "deny reuse on unclean connections".)
    ///
    /// A new connection (this hop opened a socket) has its socket recorded instead, for the requests that will reuse
    /// it. HTTP/2 is not checked: frames of other streams may be waiting on a connection in use, and its framing
    /// leaves no bytes past a body.
    private func isUnclean(_ ends: ConnectionSockets.Ends) -> Bool {
        if !opened.isEmpty {
            // Happy eyeballs may have opened more than one: the connection's is the one at its local port.
            let socket = opened.count == 1 ? opened[0] : opened.first { ccurl_socket_local_port($0) == ends.localPort }
            if let socket { connections.record(socket, ends: ends) }
            return false
        }
        guard !onNewConnection, let socket = connections.socket(of: ends), !easy.agreedHTTP2 else { return false }
        return ccurl_easy_input_waiting(easy.raw, socket) != 0
    }

    /// Tells the loop when a hop's response begins; counts header bytes across every response of the transfer
    /// (redirects included) and stops at the bound.
    private func receiveHeader(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        // The first header line is the status line of the hop's first response (or of a 1xx before it): "HTTP/2 200"
        // over HTTP/2, as curl writes it.
        let bytes = UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : count)
        if !answered {
            answered = true
            didAnswer(origin, !bytes.starts(with: "HTTP/1".utf8))
        }
        if let failure = head.take(bytes) {
            abortReason = failure
            return ccurl_write_abort()
        }
        return count
    }

    private func receive(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard let data, count > 0 else { return count }
        if let failure = accept(UnsafeRawBufferPointer(start: data, count: count)) {
            abortReason = failure
            body.discard()
            return ccurl_write_abort()
        }
        // A probe stores nothing: once its first bytes are in (with the sniffer, and as many as it asked for), it
        // stops, and the verdict decides its result.
        if request.probe && sniffing.probeHasHead && body.probeHasAll {
            probeEnded = true
            return ccurl_write_abort()
        }
        return count
    }

    /// Takes one chunk of the body: judges the response at the first, hands it to the body (cap, file), and
    /// the first bytes to the sniffer. Returns why the transfer must stop, or nil.
    private func accept(_ chunk: UnsafeRawBufferPointer) -> FetchFailure? {
        if redirects.isDroppingBody { return redirects.drop(chunk.count) }
        if !body.begun {
            switch head.bodyStart(status: easy.responseCode) {
            case .redirect:
                return redirects.drop(chunk.count)
            case .refused(let failure):
                return failure
            case .take:
                if let failure = body.begin(declaredLength: easy.info(offset: CURLINFO_CONTENT_LENGTH_DOWNLOAD_T)) {
                    return failure
                }
            }
        }
        if let failure = body.append(chunk) { return failure }
        if let first = body.takeHead() { return handOver(first) }
        return nil
    }

    /// Hands the body's first bytes to the sniffer; applies its verdict when it came at once, and returns why the
    /// transfer must stop (a refused type, a type over its cap), or nil.
    private func handOver(_ first: [UInt8]) -> FetchFailure? {
        sniffing.handedOver()
        // Curl is still receiving: the verdict applies, and the transfer goes on unless it refuses the body.
        guard let verdict = requestSniff(first), case .failed(let failure)? = decide(verdict) else { return nil }
        return failure
    }

    /// Applies the sniffer's verdict; returns the outcome when it settles the transfer (a refused type, a type
    /// over its cap, or curl already finished), nil while the transfer goes on.
    func decide(_ verdict: SniffVerdict) -> TransferOutcome? {
        let next = sniffing.verdictArrives()
        guard next != .ignore else { return nil }
        if case .refused(let failure) = body.decide(verdict) { return .failed(failure) }
        return next == .applyAndComplete ? completed() : nil
    }

    // MARK: - Completion

    /// What follows curl's end of the current request (`code` is its result). Everything that needs the easy
    /// handle's state is read here.
    func curlFinished(_ code: CURLcode) -> Step {
        if probeEnded { return awaitingType() }
        if uncleanConnection { return .retry }
        if let abortReason { return .settle(.failed(abortReason)) }
        guard code == CURLE_OK else { return isSpoiltAnswer(code) ? .retry : .settle(.failed(curlFailure(code))) }
        let ending = head.ending(
            status: easy.responseCode, bodyBegun: body.begun, probe: request.probe,
            conditional: !request.validators.isEmpty)
        switch ending {
        case .redirect:
            switch redirects.next(location: head.location, resolved: easy.info(string: CURLINFO_REDIRECT_URL)) {
            case .success(let target): return .follow(target)
            case .failure(let refusal): return .settle(.failed(refusal))
            }
        case .notModified: return .settle(.notModified(head.validators))
        case .failed(let failure): return .settle(.failed(failure))
        case .body: return awaitingType()
        }
    }

    /// Whether the hop's answer, on a reused connection, was no HTTP before any header line (curl 7.88: "Received
    /// HTTP/0.9 when not allowed", or a weird server reply): bytes an origin sent past an earlier response's length
    /// that came after `isUnclean(_:)` looked (written late, or still in flight then) begin what curl reads as the
    /// answer. The request (a GET: a probe is one too, cut off at its first bytes) is made again on a new
    /// connection, once: on a new connection (the retry's always is: it opened a socket), or after a header line
    /// (before which no body byte can come), such an answer is the origin's, bad-response. HTTP/2 is left out as
    /// `isUnclean(_:)` leaves it: curl makes its status line itself.
    private func isSpoiltAnswer(_ code: CURLcode) -> Bool {
        (code == CURLE_UNSUPPORTED_PROTOCOL || code == CURLE_WEIRD_SERVER_REPLY) && started && opened.isEmpty
            && !answered && !easy.agreedHTTP2
    }

    /// Curl is done; the outcome waits for the type, which is asked for now if the body was shorter than the
    /// sniffing window.
    private func awaitingType() -> Step {
        switch sniffing.curlFinishes() {
        case .sniffWhatCame:
            // A verdict reached at once settles the transfer now (curl has finished).
            if let verdict = requestSniff(body.takeHead(ended: true) ?? []), let outcome = decide(verdict) {
                return .settle(outcome)
            }
            return .awaitType
        case .awaitVerdict:
            return .awaitType
        case .complete:
            return .settle(completed())
        }
    }

    /// The outcome once curl has finished and the type is known: the committed file, or the probe's finding.
    private func completed() -> TransferOutcome {
        if request.probe {
            guard let type = body.type else { return .failed(FetchFailure(.network, "no body")) }
            return .probed(type, bytes: body.probedSize, head: body.probedHead, whole: !probeEnded)
        }
        let provenance = FetchedMedia.Provenance(redirects: redirects.followed, contentType: head.contentType)
        return body.commit(validators: head.validators, provenance: provenance)
    }

    /// Settles the transfer with this outcome (used for cancellation and shutdown too). Idempotent.
    func finish(with outcome: TransferOutcome) {
        guard let completion else { return }
        self.completion = nil
        if case .failed = outcome { body.discard() }
        completion(outcome)
    }

    /// What curl's `code` means for this transfer.
    private func curlFailure(_ code: CURLcode) -> FetchFailure {
        CurlFailure(
            code: code, message: easy.errorMessage(code), now: .now, deadline: request.deadline,
            connected: easy.info(offset: CURLINFO_CONNECT_TIME_T) > 0, requested: started, refusals: refusals,
            names: settings.names,
            bytes: bytes,
            capBeforeType: settings.caps.beforeType
        ).failure
    }
}

@available(*, unavailable)
extension Transfer: Sendable {}
