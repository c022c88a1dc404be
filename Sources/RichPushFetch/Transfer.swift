internal import CCurl
import RichPushCore
import RichPushStore
#if canImport(Glibc)
    import Glibc
#endif

/// One transfer in the loop: its easy handle, its partial file and the sniffing state.
/// Lives on the loop's thread only; the loop's registry keeps it alive while curl may call back into it.
///
/// Redirects are followed here, not by curl: each hop's Location goes through the same `URLCheck` as the first
/// URL (scheme, credentials, length, characters, port) before the next request is made, and the loop re-adds
/// the handle for it. The type is decided off the loop (`BodySniffer`): the transfer hands over its first
/// bytes and goes on receiving; the loop delivers the verdict with `decide(_:)`.
final class Transfer {
    /// What the loop must do once curl has finished with the handle.
    enum Step {
        /// Settle with this outcome.
        case settle(TransferOutcome)
        /// Wait for the type's verdict (`decide(_:)` then gives the outcome).
        case awaitType
        /// Make the next request, to this URL (already checked), on the same handle.
        case follow(String)
    }

    private enum Sniffing {
        case collecting, pending, decided
    }

    let request: TransferRequest
    let easy: EasyHandle
    /// Whether `easy` is in the multi handle; kept by the loop.
    var attached = false
    /// Whether the transfer waits in the loop's `AdmissionQueue` to be put into the multi handle; kept by the loop.
    var queued = false
    /// The origin of the current hop's URL (`AdmissionQueue.origin(of:)`).
    private(set) var origin: String
    /// Whether the current hop has a connection (curl asked to send its request on one).
    private(set) var started = false
    private let settings: FetchSettings
    private let requestSniff: ([UInt8]) -> Void
    private let didStart: (String) -> Void
    private var completion: ((TransferOutcome) -> Void)?

    /// What happens to the body's bytes: cap, file, first bytes for the sniffer.
    private let body: MediaBody
    /// Body bytes received so far.
    var bytes: Int { body.bytes }
    private var sniffing = Sniffing.collecting
    /// Header bytes of every response of the transfer, redirects included.
    private var headerBytes = 0
    /// Redirects followed so far.
    private var hops = 0
    /// Whether curl has finished the last request (the outcome then waits only for the type).
    private var curlDone = false
    /// The latest response's ETag, Last-Modified and Location values, as received.
    private var etag: String?
    private var lastModified: String?
    private var location: String?
    /// The latest response's Retry-After value, as received.
    private var retryAfter: String?
    /// Body bytes of a redirect response, read and dropped.
    private var redirectBodyBytes: Int?
    /// Why a callback stopped the transfer; reported instead of curl's generic abort code.
    private var abortReason: FetchFailure?
    /// Whether a probe stopped the transfer because its first bytes were in (its verdict then decides the outcome).
    private var probeEnded = false
    /// The last address the policy refused, for when curl then fails to connect.
    private var refusedAddress: String?
    /// The last port the policy refused.
    private var refusedPort: Int?

    /// The statuses whose Location is followed.
    private static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]
    /// The most body a redirect response may carry (it is read and dropped, so the connection can be reused).
    private static let redirectBodyLimit = 64 * 1024

    /// A transfer; `requestSniff` hands the first bytes to the sniffing service (the verdict comes back
    /// through `decide(_:)`); `didStart` is told the hop's origin when a hop gets its connection.
    init(
        request: TransferRequest, easy: EasyHandle, settings: FetchSettings,
        requestSniff: @escaping ([UInt8]) -> Void,
        didStart: @escaping (String) -> Void,
        completion: @escaping (TransferOutcome) -> Void
    ) {
        self.request = request
        self.easy = easy
        self.settings = settings
        self.requestSniff = requestSniff
        self.didStart = didStart
        self.origin = AdmissionQueue.origin(of: request.url)
        self.completion = completion
        let spares = settings.spares
        body = MediaBody(
            caps: settings.caps, sniffBytes: settings.limits.sniffBytes,
            storage: request.probe ? nil : { () throws(StoreError) in try spares.take() })
    }

    static func from(_ userdata: UnsafeMutableRawPointer?) -> Transfer {
        Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
    }

    /// Sets every option on the easy handle.
    func configure() throws(CurlOptionError) {
        let network = settings.network
        let context = Unmanaged.passUnretained(self).toOpaque()
        try easy.set(CURLOPT_URL, request.url)
        try easy.set(CURLOPT_NOSIGNAL, 1)
        // Removing a transfer whose name is still being resolved would otherwise join curl's resolver thread
        // (getaddrinfo), which waits out the system resolver's own timeouts (10 s and more against a name
        // server that never answers) with the loop thread blocked. Quick exit detaches that thread instead; it
        // ends when getaddrinfo returns.
        try easy.set(CURLOPT_QUICK_EXIT, 1)
        let protocols = network.allowHTTP ? "http,https" : "https"
        try easy.set(CURLOPT_PROTOCOLS_STR, protocols)
        // Redirects are followed by `follow`, after the same checks as the first URL.
        try easy.set(CURLOPT_FOLLOWLOCATION, 0)
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(network.connectTimeout))
        try easy.set(CURLOPT_LOW_SPEED_LIMIT, network.lowSpeedBytesPerSecond)
        try easy.set(CURLOPT_LOW_SPEED_TIME, max(1, Int(network.lowSpeedWindow.components.seconds)))
        // An empty proxy disables the environment's http_proxy / https_proxy / all_proxy.
        try easy.set(CURLOPT_PROXY, "")
        try easy.set(CURLOPT_MAXFILESIZE_LARGE, offset: Int64(settings.caps.beforeType))
        try easy.set(CURLOPT_USERAGENT, network.userAgent)
        try setHop(request.url)
        try easy.set(CURLOPT_RESOLVE, list: network.resolve)
        try easy.set(CURLOPT_HTTPHEADER, list: request.validators.requestHeaders)
        if let bundle = network.caBundle { try easy.set(CURLOPT_CAINFO, bundle) }
        // CURLOPT_ACCEPT_ENCODING stays unset: no Accept-Encoding is sent and nothing is ever decoded.
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
        try easy.setPrereqFunction { userdata, primaryIP, _, primaryPort, _ in
            Transfer.from(userdata).approveConnection(primaryIP.map { String(cString: $0) }, port: Int(primaryPort))
        }
        try easy.set(CURLOPT_PREREQDATA, pointer: context)
    }

    /// The options that change with each hop: its URL, the time left, and connection sharing.
    private func setHop(_ url: String) throws(CurlOptionError) {
        try easy.set(CURLOPT_URL, url)
        try easy.set(CURLOPT_TIMEOUT_MS, max(1, Self.milliseconds(request.deadline - .now)))
        // Over TLS, prefer waiting for a connection that may multiplex (HTTP/2 via ALPN) to opening another.
        // Plain http is HTTP/1.1 here (no h2c), where waiting would only delay a transfer behind a slow one.
        try easy.set(CURLOPT_PIPEWAIT, url.utf8.starts(with: "https:".utf8) ? 1 : 0)
    }

    /// Readies the handle for the next hop of a redirect (the loop re-adds it to the multi handle).
    func follow(_ url: String) throws(CurlOptionError) {
        etag = nil
        lastModified = nil
        location = nil
        retryAfter = nil
        redirectBodyBytes = nil
        refusedAddress = nil
        refusedPort = nil
        origin = AdmissionQueue.origin(of: url)
        started = false
        try setHop(url)
    }

    static func milliseconds(_ duration: Duration) -> Int { duration.inMilliseconds }

    // MARK: - Callbacks (on the loop thread, inside curl_multi_perform)

    private func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        var raw = [UInt8](repeating: 0, count: 16)
        let count = Int(ccurl_sockaddr_address(address, &raw))
        guard let ip = IPAddress(bytes: Array(raw.prefix(count))) else {
            refusedAddress = "an address of an unsupported family"
            return ccurl_socket_bad()
        }
        if let reason = settings.network.addressPolicy.refusal(of: ip) {
            refusedAddress = reason
            return ccurl_socket_bad()
        }
        let port = Int(ccurl_sockaddr_port(address))
        if !settings.network.isAllowed(port: port) {
            refusedPort = port
            return ccurl_socket_bad()
        }
        return ccurl_sockaddr_open(address)
    }

    /// Judges the address and port of every connection about to carry a request, reused ones included.
    private func approveConnection(_ primaryIP: String?, port: Int) -> Int32 {
        if !settings.network.isAllowed(port: port) {
            refusedPort = port
            return ccurl_prereq_abort()
        }
        guard let text = primaryIP, let ip = IPAddress(text) else {
            refusedAddress = "an unparseable connection address"
            return ccurl_prereq_abort()
        }
        if let reason = settings.network.addressPolicy.refusal(of: ip) {
            refusedAddress = reason
            return ccurl_prereq_abort()
        }
        if !started {
            started = true
            didStart(origin)
        }
        return ccurl_prereq_ok()
    }

    /// Counts header bytes across every response of the transfer (redirects included) and stops at the bound.
    private func receiveHeader(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        headerBytes += count
        guard headerBytes <= settings.limits.maximumHeaderBytes else {
            abortReason = FetchFailure(
                .badResponse, "more than \(settings.limits.maximumHeaderBytes) bytes of response headers")
            return ccurl_write_abort()
        }
        guard let data, count > 5 else { return count }
        let line = UnsafeRawBufferPointer(start: data, count: count)
        if line.starts(with: "HTTP/".utf8) {
            etag = nil
            lastModified = nil
            location = nil
            retryAfter = nil
        } else if let value = Self.headerValue(line, named: "etag") {
            etag = value
        } else if let value = Self.headerValue(line, named: "last-modified") {
            lastModified = value
        } else if let value = Self.headerValue(line, named: "location") {
            location = value
        } else if let value = Self.headerValue(line, named: "retry-after") {
            retryAfter = value
        }
        return count
    }

    /// The value of a header line `Name: value\r\n` when its name is `name` (lowercase), trimmed.
    static func headerValue(_ line: UnsafeRawBufferPointer, named name: String) -> String? {
        let nameBytes = Array(name.utf8)
        guard line.count > nameBytes.count, line[nameBytes.count] == UInt8(ascii: ":") else { return nil }
        for (index, byte) in nameBytes.enumerated() where (line[index] | 0x20) != byte { return nil }
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
        var value = line[(nameBytes.count + 1)...]
        while let first = value.first, isSpace(first) { value = value.dropFirst() }
        while let last = value.last, isSpace(last) { value = value.dropLast() }
        return value.isEmpty ? nil : String(decoding: value, as: UTF8.self)
    }

    private func receive(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard let data, count > 0 else { return count }
        if let failure = accept(UnsafeRawBufferPointer(start: data, count: count)) {
            abortReason = failure
            body.discard()
            return ccurl_write_abort()
        }
        // A probe stores nothing: once the first bytes are in, it stops, and the verdict decides its result.
        if request.probe && sniffing != .collecting {
            probeEnded = true
            return ccurl_write_abort()
        }
        return count
    }

    /// Whether the response being received is a redirect to follow.
    private var isRedirect: Bool {
        location != nil && Self.redirectStatuses.contains(easy.info(long: CURLINFO_RESPONSE_CODE))
    }

    /// Takes one chunk of the body: checks the status at the first, hands it to the body (cap, file), and
    /// the first bytes to the sniffer. Returns why the transfer must stop, or nil.
    private func accept(_ chunk: UnsafeRawBufferPointer) -> FetchFailure? {
        if redirectBodyBytes == nil, !body.begun, isRedirect { redirectBodyBytes = 0 }
        if let dropped = redirectBodyBytes {
            redirectBodyBytes = dropped + chunk.count
            guard dropped + chunk.count <= Self.redirectBodyLimit else {
                return FetchFailure(.badResponse, "a redirect with a body of more than \(Self.redirectBodyLimit) bytes")
            }
            return nil
        }
        if !body.begun {
            if let failure = checkStatus() { return failure }
            if let failure = body.begin(declaredLength: easy.info(offset: CURLINFO_CONTENT_LENGTH_DOWNLOAD_T)) {
                return failure
            }
        }
        if let failure = body.append(chunk) { return failure }
        if sniffing == .collecting, let head = body.takeHead() { startSniffing(head) }
        return nil
    }

    private func startSniffing(_ head: [UInt8]) {
        sniffing = .pending
        requestSniff(head)
    }

    /// What a probe found: the type, and the declared length when there was one (else the bytes seen).
    private func probeResult() -> TransferOutcome {
        guard let type = body.type else { return .failed(FetchFailure(.network, "no body")) }
        return .probed(type, bytes: body.probedSize)
    }

    private func checkStatus() -> FetchFailure? {
        let status = easy.info(long: CURLINFO_RESPONSE_CODE)
        if status == 206 { return FetchFailure(.httpStatus, "HTTP 206: a partial response to a request for the whole") }
        guard (200...299).contains(status) else {
            return FetchFailure(.httpStatus, "HTTP \(status)", cause: .status(status, retryAfter: retryAfter))
        }
        return nil
    }

    /// Applies the sniffer's verdict; returns the outcome when it settles the transfer (a refused type, a type
    /// over its cap, or curl already finished), nil while the transfer goes on.
    func decide(_ verdict: SniffVerdict) -> TransferOutcome? {
        guard sniffing == .pending else { return nil }
        sniffing = .decided
        if case .refused(let failure) = body.decide(verdict) { return .failed(failure) }
        return curlDone ? completed() : nil
    }

    // MARK: - Completion

    /// What follows curl's end of the current request (`code` is its result). Everything that needs the easy
    /// handle's state is read here.
    func curlFinished(_ code: CURLcode) -> Step {
        if probeEnded { return awaitingType() }
        if let abortReason { return .settle(.failed(abortReason)) }
        guard code == CURLE_OK else { return .settle(.failed(failure(code))) }
        if isRedirect { return nextHop() }
        if !body.begun {
            if request.probe { return .settle(.failed(checkStatus() ?? emptyBody())) }
            if !request.validators.isEmpty, easy.info(long: CURLINFO_RESPONSE_CODE) == 304 {
                return .settle(.notModified)
            }
            return .settle(.failed(checkStatus() ?? emptyBody()))
        }
        return awaitingType()
    }

    private func emptyBody() -> FetchFailure {
        FetchFailure(.emptyBody, "HTTP \(easy.info(long: CURLINFO_RESPONSE_CODE)) with no body")
    }

    /// Curl is done; the outcome waits for the type, which is asked for now if the body was shorter than the
    /// sniffing window.
    private func awaitingType() -> Step {
        curlDone = true
        switch sniffing {
        case .collecting:
            startSniffing(body.takeHead(ended: true) ?? [])
            return .awaitType
        case .pending:
            return .awaitType
        case .decided:
            return .settle(completed())
        }
    }

    /// The next hop of a redirect, after the checks the first URL had; or why it is refused.
    private func nextHop() -> Step {
        hops += 1
        guard hops <= settings.network.maximumRedirects else {
            return .settle(.failed(FetchFailure(.tooManyRedirects, "more than \(settings.network.maximumRedirects) redirects")))
        }
        let raw = location ?? ""
        if let refusal = settings.urlCheck.checkText(raw) {
            return .settle(.failed(FetchFailure(refusal.code, "a redirect's Location: \(refusal.detail)")))
        }
        guard let target = easy.info(string: CURLINFO_REDIRECT_URL) else {
            return .settle(.failed(FetchFailure(.badURL, "a redirect's Location cannot be resolved: \(raw)")))
        }
        if let refusal = settings.urlCheck.check(target) {
            return .settle(.failed(FetchFailure(refusal.code, "a redirect to \(target.prefix(200)): \(refusal.detail)")))
        }
        return .follow(target)
    }

    /// The outcome once curl has finished and the type is known: the committed file, or the probe's finding.
    private func completed() -> TransferOutcome {
        if request.probe { return probeResult() }
        switch body.commit(validators: Validators(response: etag, lastModified: lastModified)) {
        case .success(let media): return .stored(media)
        case .failure(let failure): return .failed(failure)
        }
    }

    /// Settles the transfer with this outcome (used for cancellation and shutdown too). Idempotent.
    func finish(with outcome: TransferOutcome) {
        guard let completion else { return }
        self.completion = nil
        if case .failed = outcome { body.discard() }
        completion(outcome)
    }

    private func failure(_ code: CURLcode) -> FetchFailure {
        let message = easy.errorMessage(code)
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            if ContinuousClock.now >= request.deadline - .milliseconds(2) {
                return FetchFailure(.expired, "the deadline came first (\(bytes) bytes received)")
            }
            let connected = easy.info(offset: CURLINFO_CONNECT_TIME_T) > 0
            return FetchFailure(.timeout, message, cause: connected ? nil : .connectTimeout)
        case CURLE_COULDNT_CONNECT, CURLE_ABORTED_BY_CALLBACK:
            if let refusedAddress { return FetchFailure(.blockedAddress, refusedAddress) }
            if let refusedPort { return FetchFailure(.blockedPort, "port \(refusedPort) is not allowed (see network.allowedPorts)") }
            return FetchFailure(.network, message, cause: code == CURLE_COULDNT_CONNECT ? .connectionRefused : nil)
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING:
            return FetchFailure(.network, message, cause: .connectionDropped)
        case CURLE_UNSUPPORTED_PROTOCOL:
            return FetchFailure(.blockedScheme, message)
        case CURLE_TOO_MANY_REDIRECTS:
            return FetchFailure(.tooManyRedirects, message)
        case CURLE_FILESIZE_EXCEEDED:
            return FetchFailure(.tooLarge, "declares more than \(settings.caps.beforeType) bytes")
        case CURLE_PARTIAL_FILE:
            return FetchFailure(.badResponse, "the body ended before its declared length: \(message)")
        case CURLE_WEIRD_SERVER_REPLY, CURLE_BAD_CONTENT_ENCODING, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            return FetchFailure(.badResponse, message)
        case CURLE_URL_MALFORMAT:
            return FetchFailure(.badURL, message)
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            return FetchFailure(.tls, message)
        default:
            return FetchFailure(.network, message)
        }
    }
}

@available(*, unavailable)
extension Transfer: Sendable {}
