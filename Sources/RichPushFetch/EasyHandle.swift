package import CCurl
import RichPushCore

/// Owns one curl easy handle (`curl_easy_init` / `curl_easy_cleanup`), its error buffer and the string lists
/// its options point at. Touched only on the fetch loop's thread.
package final class EasyHandle {
    package let raw: UnsafeMutableRawPointer
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var lists: [UnsafeMutablePointer<curl_slist>] = []
    /// The share handle the transfers on this handle keep their TLS sessions in (CURLOPT_SHARE), held until
    /// curl_easy_cleanup has detached the handle from it.
    private var share: ShareHandle?

    package init() {
        // curl_easy_init fails only when memory is exhausted: not an input error.
        guard let raw = curl_easy_init() else { fatalError("curl_easy_init failed") }
        self.raw = raw
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        _ = ccurl_easy_setopt_ptr(raw, CURLOPT_ERRORBUFFER, errorBuffer)
    }

    deinit {
        curl_easy_cleanup(raw)
        for list in lists { curl_slist_free_all(list) }
        errorBuffer.deallocate()
    }

    /// Makes the handle as new for another transfer (curl_easy_reset), keeping what curl keeps across a reset
    /// (its buffers, its DNS and connection links): reusing handles saves the allocations of a fresh one.
    package func reset() {
        curl_easy_reset(raw)
        for list in lists { curl_slist_free_all(list) }
        lists = []
        errorBuffer.pointee = 0
        _ = ccurl_easy_setopt_ptr(raw, CURLOPT_ERRORBUFFER, errorBuffer)
    }

    /// CURLOPT_SHARE: the transfers on this handle keep their TLS sessions in `share` (set again for each transfer,
    /// since curl_easy_reset resets the session cache's size to the default).
    func use(_ share: ShareHandle) throws(CurlOptionError) {
        try check(CURLOPT_SHARE, ccurl_easy_setopt_ptr(raw, CURLOPT_SHARE, share.raw))
        self.share = share
    }

    /// curl's message for the last failure (CURLOPT_ERRORBUFFER), or the generic text of `code`.
    package func errorMessage(_ code: CURLcode) -> String {
        if errorBuffer.pointee != 0 { return String(cString: errorBuffer) }
        return String(cString: curl_easy_strerror(code))
    }

    /// curl_easy_setopt with a long argument.
    package func set(_ option: CURLoption, _ value: Int) throws(CurlOptionError) {
        try check(option, ccurl_easy_setopt_long(raw, option, value))
    }

    /// curl_easy_setopt with a curl_off_t argument.
    package func set(_ option: CURLoption, offset value: Int64) throws(CurlOptionError) {
        try check(option, ccurl_easy_setopt_off(raw, option, curl_off_t(value)))
    }

    /// curl_easy_setopt with a string argument (curl copies strings).
    package func set(_ option: CURLoption, _ value: String) throws(CurlOptionError) {
        try check(option, ccurl_easy_setopt_string(raw, option, value))
    }

    /// Sets a blob option to a copy of `bytes` (CURL_BLOB_COPY).
    package func set(_ option: CURLoption, bytes: [UInt8]) throws(CurlOptionError) {
        try check(option, bytes.withUnsafeBytes { ccurl_easy_setopt_blob(raw, option, $0.baseAddress, $0.count) })
    }

    /// curl_easy_setopt with a pointer argument (callback data).
    package func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) throws(CurlOptionError) {
        try check(option, ccurl_easy_setopt_ptr(raw, option, value))
    }

    /// curl_easy_setopt with a string list, kept alive as long as this handle.
    package func set(_ option: CURLoption, list values: [String]) throws(CurlOptionError) {
        guard !values.isEmpty else { return }
        var list: UnsafeMutablePointer<curl_slist>? = nil
        for value in values { list = curl_slist_append(list, value) }
        guard let list else { fatalError("curl_slist_append failed") }
        lists.append(list)
        try check(option, ccurl_easy_setopt_slist(raw, option, list))
    }

    /// CURLOPT_WRITEFUNCTION.
    func setWriteFunction(_ callback: ccurl_write_callback) throws(CurlOptionError) {
        try check(CURLOPT_WRITEFUNCTION, ccurl_easy_setopt_write_function(raw, callback))
    }

    /// CURLOPT_HEADERFUNCTION.
    func setHeaderFunction(_ callback: ccurl_write_callback) throws(CurlOptionError) {
        try check(CURLOPT_HEADERFUNCTION, ccurl_easy_setopt_header_function(raw, callback))
    }

    /// CURLOPT_OPENSOCKETFUNCTION.
    func setOpenSocketFunction(_ callback: ccurl_opensocket_callback) throws(CurlOptionError) {
        try check(CURLOPT_OPENSOCKETFUNCTION, ccurl_easy_setopt_opensocket_function(raw, callback))
    }

    /// CURLOPT_PREREQFUNCTION.
    func setPrereqFunction(_ callback: ccurl_prereq_callback) throws(CurlOptionError) {
        try check(CURLOPT_PREREQFUNCTION, ccurl_easy_setopt_prereq_function(raw, callback))
    }

    /// curl_easy_getinfo for a long result; 0 when unavailable.
    package func info(long item: CURLINFO) -> Int {
        var value = 0
        return ccurl_easy_getinfo_long(raw, item, &value) == CURLE_OK ? value : 0
    }

    /// curl_easy_getinfo for a curl_off_t result; -1 when unavailable.
    package func info(offset item: CURLINFO) -> Int64 {
        var value: curl_off_t = -1
        return ccurl_easy_getinfo_off(raw, item, &value) == CURLE_OK ? Int64(value) : -1
    }

    /// curl_easy_getinfo for a string result.
    package func info(string item: CURLINFO) -> String? {
        var value: UnsafePointer<CChar>? = nil
        guard ccurl_easy_getinfo_string(raw, item, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }

    /// Sets a transfer's options for its first hop: `options`, `hop`, and the fixed ones every transfer has.
    func apply(_ options: TransferOptions, hop: TransferOptions.Hop) throws(CurlOptionError) {
        try set(CURLOPT_URL, hop.url)
        try set(CURLOPT_NOSIGNAL, 1)
        // Removing a transfer whose name is still being resolved would otherwise join curl's resolver thread
        // (getaddrinfo), which waits out the system resolver's own timeouts (10 s and more against a name
        // server that never answers) with the loop thread blocked. Quick exit detaches that thread instead; it
        // ends when getaddrinfo returns.
        try set(CURLOPT_QUICK_EXIT, 1)
        try set(CURLOPT_PROTOCOLS_STR, options.protocols)
        // Redirects are followed by the transfer (`RedirectPolicy`), after the same checks as the first URL.
        try set(CURLOPT_FOLLOWLOCATION, 0)
        try set(CURLOPT_CONNECTTIMEOUT_MS, options.connectTimeoutMilliseconds)
        try set(CURLOPT_LOW_SPEED_LIMIT, options.network.lowSpeedBytesPerSecond)
        try set(CURLOPT_LOW_SPEED_TIME, options.lowSpeedSeconds)
        // An empty proxy disables the environment's http_proxy / https_proxy / all_proxy.
        try set(CURLOPT_PROXY, "")
        try set(CURLOPT_MAXFILESIZE_LARGE, offset: options.maximumFileSize)
        try set(CURLOPT_USERAGENT, options.network.userAgent)
        try apply(hop)
        try set(CURLOPT_RESOLVE, list: options.network.resolve)
        try set(CURLOPT_HTTPHEADER, list: options.headers)
        try trust(options.caInfo)
        // CURLOPT_ACCEPT_ENCODING stays unset: no Accept-Encoding is sent and nothing is ever decoded.
    }

    /// How long a fetch loop keeps the trusted certificates it read (CURLOPT_CA_CACHE_TIMEOUT): an hour, so that a
    /// bundle changed on disk (a CA removed by a system update, a private CA rotated) is trusted within the hour
    /// by a long-running `serve` or `worker` (libcurl's default keeps it a day); reading the system's bundle
    /// again costs ~13 ms once an hour.
    static let caCacheSeconds = 3600

    /// Whether this libcurl was built with a default CA bundle (`ccurl_default_cainfo`; Debian's is
    /// /etc/ssl/certs/ca-certificates.crt).
    static let hasDefaultBundle = ccurl_default_cainfo() != nil

    /// Sets the certificates trusted: `bundle`'s, else the system's bundle (libcurl's default CAINFO), and no
    /// directory. libcurl's default CAPATH (Debian's /etc/ssl/certs, the system's CAs one a file) added the system's
    /// CAs to a given bundle, which is to replace them, and kept libcurl from keeping the store it read (it keeps one
    /// only for a file alone): each new TLS connection read the whole bundle again, 139 certificates and ~13 ms of
    /// CPU for the system's. Read once, the store is kept (by the multi handle, or the easy handle's own for
    /// curl_easy_perform) for `caCacheSeconds`. A libcurl built with a CA directory alone keeps it: without it, it
    /// would trust nothing.
    /// A bundle given as bytes (`CertificateBundleCopy.Source.bytes`, where no copy in memory can be made) is read by
    /// libcurl at each TLS connection: it keeps no store read from a blob.
    package func trust(_ bundle: CertificateBundleCopy.Source?) throws(CurlOptionError) {
        if let bundle {
            switch bundle {
            case .path(let path): try set(CURLOPT_CAINFO, path)
            case .bytes(let bytes): try set(CURLOPT_CAINFO_BLOB, bytes: bytes)
            }
            try set(CURLOPT_CAPATH, pointer: nil)
        } else if Self.hasDefaultBundle {
            try set(CURLOPT_CAPATH, pointer: nil)
        }
        try set(CURLOPT_CA_CACHE_TIMEOUT, Self.caCacheSeconds)
    }

    /// Sets the options that change with each hop: its URL, the time left and whether it needs a new connection
    /// (CURLOPT_PIPEWAIT is set as the hop goes into the multi handle: `AdmissionQueue.pipeWait(for:)`).
    func apply(_ hop: TransferOptions.Hop) throws(CurlOptionError) {
        try set(CURLOPT_URL, hop.url)
        try set(CURLOPT_TIMEOUT_MS, hop.timeoutMilliseconds)
        try set(CURLOPT_FRESH_CONNECT, hop.newConnection ? 1 : 0)
    }

    /// Whether the connection of the current transfer agreed on HTTP/2 by ALPN, its TLS handshake done (OpenSSL's
    /// selected protocol on CURLINFO_TLS_SSL_PTR's connection: `ccurl_easy_alpn_is_h2`); false over plain http, and
    /// before the transfer has a connection. Known from curl's pre-request callback on, where CURLINFO_HTTP_VERSION
    /// still says nothing (libcurl 7.88 sets it at the response's status line).
    var agreedHTTP2: Bool { ccurl_easy_alpn_is_h2(raw) != 0 }

    /// Whether the connection's TLS session can be resumed by another, and so is in the loop's share: over TLS 1.2
    /// from the handshake's end, over TLS 1.3 once the server's session ticket has been read (`ccurl.h`).
    var sessionResumable: Bool { ccurl_easy_session_resumable(raw) != 0 }

    /// The status of the latest response (CURLINFO_RESPONSE_CODE); 0 before one.
    package var responseCode: Int { info(long: CURLINFO_RESPONSE_CODE) }

    /// The value of the latest response's header `name` (its last when repeated; curl_easy_header), or nil.
    package func header(_ name: String) -> String? { ccurl_easy_header_value(raw, name).map { String(cString: $0) } }

    private func check(_ option: CURLoption, _ code: CURLcode) throws(CurlOptionError) {
        guard code == CURLE_OK else {
            throw CurlOptionError(
                detail: "curl_easy_setopt(\(option.rawValue)): \(String(cString: curl_easy_strerror(code)))")
        }
    }
}

@available(*, unavailable)
extension EasyHandle: Sendable {}

/// libcurl refused an option (an option this libcurl does not support, or a value it rejects).
package struct CurlOptionError: Error {
    package let detail: String
}
