internal import CCurl
#if canImport(Glibc)
    import Glibc
#endif

/// What a transfer needs to know, fixed when it is asked for.
struct TransferRequest: Sendable {
    var url: String
    var deadline: ContinuousClock.Instant
    /// Sent as If-None-Match / If-Modified-Since; a 304 then ends the transfer as `not-modified`.
    var validators = Validators()
    /// Fetch only the headers and the first bytes, to tell what the media is; nothing is stored (`explain`).
    var probe = false
}

/// One transfer in the loop: its easy handle, its partial file, the running hash and the sniffing state.
/// Lives on the loop's thread only; the loop's registry keeps it alive while curl may call back into it.
final class Transfer {
    let request: TransferRequest
    let easy: EasyHandle
    private let settings: FetchSettings
    private unowned let sniffer: Sniffer
    private var completion: ((Result<FetchedMedia, FetchFailure>) -> Void)?

    private var partial: PartialAttachment?
    private var hash: SHA256?
    private var head: [UInt8] = []
    private var type: MediaType?
    private var cap: Int
    private var declaredLength: Int64 = -1
    private(set) var bytes = 0
    private var headerBytes = 0
    /// The validators of the latest response (a redirect's are replaced by the next response's).
    private var validators = Validators()
    /// Why a callback stopped the transfer; reported instead of curl's generic abort code.
    private var abortReason: FetchFailure?
    /// The last address the policy refused, for when curl then fails to connect.
    private var refusedAddress: String?
    /// The last port the policy refused.
    private var refusedPort: Int?

    init(
        request: TransferRequest, easy: EasyHandle, settings: FetchSettings, sniffer: Sniffer,
        completion: @escaping (Result<FetchedMedia, FetchFailure>) -> Void
    ) {
        self.request = request
        self.easy = easy
        self.settings = settings
        self.sniffer = sniffer
        self.completion = completion
        self.cap = settings.limits.largestCap
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
        try easy.set(CURLOPT_REDIR_PROTOCOLS_STR, protocols)
        try easy.set(CURLOPT_FOLLOWLOCATION, 1)
        try easy.set(CURLOPT_MAXREDIRS, network.maximumRedirects)
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(network.connectTimeout))
        try easy.set(CURLOPT_TIMEOUT_MS, max(1, Self.milliseconds(request.deadline - .now)))
        try easy.set(CURLOPT_LOW_SPEED_LIMIT, network.lowSpeedBytesPerSecond)
        try easy.set(CURLOPT_LOW_SPEED_TIME, max(1, Int(network.lowSpeedWindow.components.seconds)))
        // An empty proxy disables the environment's http_proxy / https_proxy / all_proxy.
        try easy.set(CURLOPT_PROXY, "")
        try easy.set(CURLOPT_MAXFILESIZE_LARGE, offset: Int64(settings.limits.largestCap))
        try easy.set(CURLOPT_USERAGENT, network.userAgent)
        // Over TLS, prefer waiting for a connection that may multiplex (HTTP/2 via ALPN) to opening another.
        // Plain http is HTTP/1.1 here (no h2c), where waiting would only delay a transfer behind a slow one.
        if request.url.lowercased().hasPrefix("https:") { try easy.set(CURLOPT_PIPEWAIT, 1) }
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

    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }

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
            validators = Validators()
        } else if let value = Self.headerValue(line, named: "etag") {
            validators.etag = value
        } else if let value = Self.headerValue(line, named: "last-modified") {
            validators.lastModified = value
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
            partial?.discard()
            return ccurl_write_abort()
        }
        return count
    }

    /// Takes one chunk of the body: checks status and size, stores and hashes it, sniffs the type once enough
    /// has arrived. Returns why the transfer must stop, or nil.
    private func accept(_ chunk: UnsafeRawBufferPointer) -> FetchFailure? {
        if request.probe { return probe(chunk) }
        if partial == nil {
            if let failure = checkStatus() { return failure }
            declaredLength = easy.info(offset: CURLINFO_CONTENT_LENGTH_DOWNLOAD_T)
            if declaredLength > Int64(cap) {
                return FetchFailure(.tooLarge, "declares \(declaredLength) bytes; no type may exceed \(cap)")
            }
            do {
                partial = try settings.store.begin()
            } catch {
                return FetchFailure(.storeFailed, error.detail)
            }
            hash = SHA256()
        }
        guard bytes + chunk.count <= cap else {
            return FetchFailure(.tooLarge, "more than \(cap) bytes\(type.map { " (the \($0.kind) cap)" } ?? "")")
        }
        do {
            try partial!.write(chunk)
        } catch {
            return FetchFailure(.storeFailed, error.detail)
        }
        hash!.update(chunk)
        bytes += chunk.count
        if type == nil {
            let wanted = settings.limits.sniffBytes - head.count
            head.append(contentsOf: chunk.prefix(wanted))
            if head.count >= settings.limits.sniffBytes { return decideType() }
        }
        return nil
    }

    /// The probe's share of `accept`: status and declared length, then the first bytes, never a file. Once the
    /// type is known the transfer stops with `probed`, which `outcome` turns into the probe's result.
    private func probe(_ chunk: UnsafeRawBufferPointer) -> FetchFailure? {
        if bytes == 0 {
            if let failure = checkStatus() { return failure }
            declaredLength = easy.info(offset: CURLINFO_CONTENT_LENGTH_DOWNLOAD_T)
            if declaredLength > Int64(cap) {
                return FetchFailure(.tooLarge, "declares \(declaredLength) bytes; no type may exceed \(cap)")
            }
        }
        bytes += chunk.count
        head.append(contentsOf: chunk.prefix(settings.limits.sniffBytes - head.count))
        guard head.count >= settings.limits.sniffBytes else { return nil }
        return decideType() ?? FetchFailure(.probed, "")
    }

    /// What a probe found: the type, and the declared length when there was one (else the bytes seen).
    private func probeResult() -> Result<FetchedMedia, FetchFailure> {
        guard let type else { return .failure(FetchFailure(.network, "no body")) }
        let size = declaredLength >= 0 ? Int(declaredLength) : bytes
        return .success(FetchedMedia(path: "", directory: "", type: type, bytes: size, sha256: ""))
    }

    private func checkStatus() -> FetchFailure? {
        let status = easy.info(long: CURLINFO_RESPONSE_CODE)
        if status == 206 { return FetchFailure(.httpStatus, "HTTP 206: a partial response to a request for the whole") }
        guard (200...299).contains(status) else { return FetchFailure(.httpStatus, "HTTP \(status)") }
        return nil
    }

    private func decideType() -> FetchFailure? {
        let verdict = sniffer.sniff(head)
        head = []
        switch verdict {
        case .unsupported(let what):
            return FetchFailure(.unsupportedType, what)
        case .supported(let sniffed):
            type = sniffed
            cap = settings.limits.cap(for: sniffed.kind)
            if declaredLength > Int64(cap) {
                return FetchFailure(.tooLarge, "declares \(declaredLength) bytes; the \(sniffed.kind) cap is \(cap)")
            }
            if bytes > cap { return FetchFailure(.tooLarge, "more than \(cap) bytes (the \(sniffed.kind) cap)") }
            return nil
        }
    }

    // MARK: - Completion

    /// Settles the transfer with curl's result; calls the completion exactly once.
    func finish(_ code: CURLcode) {
        finish(with: outcome(code))
    }

    /// Settles the transfer with this outcome (used for cancellation and shutdown too). Idempotent.
    func finish(with outcome: Result<FetchedMedia, FetchFailure>) {
        guard let completion else { return }
        self.completion = nil
        if case .failure = outcome { partial?.discard() }
        partial = nil
        completion(outcome)
    }

    private func outcome(_ code: CURLcode) -> Result<FetchedMedia, FetchFailure> {
        if let abortReason { return abortReason.code == .probed ? probeResult() : .failure(abortReason) }
        guard code == CURLE_OK else { return .failure(failure(code)) }
        if request.probe {
            if bytes == 0 {
                if let failure = checkStatus() { return .failure(failure) }
                return .failure(FetchFailure(.emptyBody, "HTTP \(easy.info(long: CURLINFO_RESPONSE_CODE)) with no body"))
            }
            if type == nil, let failure = decideType() { return .failure(failure) }
            return probeResult()
        }
        if partial == nil {
            if !request.validators.isEmpty, easy.info(long: CURLINFO_RESPONSE_CODE) == 304 {
                return .failure(FetchFailure(.notModified, "304 Not Modified"))
            }
            if let failure = checkStatus() { return .failure(failure) }
            return .failure(FetchFailure(.emptyBody, "HTTP \(easy.info(long: CURLINFO_RESPONSE_CODE)) with no body"))
        }
        if type == nil, let failure = decideType() { return .failure(failure) }
        guard let partial, let type, let hash else { return .failure(FetchFailure(.network, "no body")) }
        do {
            let path = try partial.commit(fileExtension: type.fileExtension)
            return .success(
                FetchedMedia(
                    path: path, directory: partial.directory, type: type, bytes: bytes, sha256: hash.finalize(),
                    validators: validators))
        } catch {
            return .failure(FetchFailure(.storeFailed, error.detail))
        }
    }

    private func failure(_ code: CURLcode) -> FetchFailure {
        let message = easy.errorMessage(code)
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            if ContinuousClock.now >= request.deadline - .milliseconds(2) {
                return FetchFailure(.expired, "the deadline came first (\(bytes) bytes received)")
            }
            return FetchFailure(.timeout, message)
        case CURLE_COULDNT_CONNECT, CURLE_ABORTED_BY_CALLBACK:
            if let refusedAddress { return FetchFailure(.blockedAddress, refusedAddress) }
            if let refusedPort { return FetchFailure(.blockedPort, "port \(refusedPort) is not allowed (see --allow-port)") }
            return FetchFailure(.network, message)
        case CURLE_UNSUPPORTED_PROTOCOL:
            return FetchFailure(.blockedScheme, message)
        case CURLE_TOO_MANY_REDIRECTS:
            return FetchFailure(.tooManyRedirects, message)
        case CURLE_FILESIZE_EXCEEDED:
            return FetchFailure(.tooLarge, "declares more than \(settings.limits.largestCap) bytes")
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

/// The settings every transfer of one fetcher shares.
struct FetchSettings: Sendable {
    var network: Configuration.Network
    var limits: Configuration.Limits
    var store: AttachmentStore
}
