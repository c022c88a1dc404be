internal import CCurl

/// Owns one curl share handle (`curl_share_init` / `curl_share_cleanup`) through which every transfer of one fetch
/// loop keeps its TLS sessions (CURL_LOCK_DATA_SSL_SESSION), so that a connection opened after another to the same
/// host resumes its session rather than paying a full handshake and certificate verification again.
///
/// Without it, libcurl 7.88 keeps sessions per easy handle: over HTTP/1.1, where each of 64 transfers at once has a
/// connection and a handle of its own, `richpush stream` resumed none of 64 sessions, where curl's tool (which shares
/// them) resumed 62 of 66 (issue 26). curl resumes a session only for the same host, port and TLS settings (the CA
/// bundle, verification), so transfers of tenants with different settings that share a loop never resume each
/// other's. A share holds curl's fixed 8 sessions, the most recently used kept.
///
/// Only sessions are shared: names are already resolved once per loop (the multi handle's DNS cache), and its
/// connections are the multi handle's. Every easy handle that uses the share is driven by the loop's one thread, so
/// the share needs no lock functions (curl_share_setopt(3): they are for handles used from several threads).
final class ShareHandle {
    let raw: UnsafeMutableRawPointer

    init() {
        // curl_share_init fails only when memory is exhausted: not an input error.
        guard let raw = curl_share_init() else { fatalError("curl_share_init failed") }
        self.raw = raw
        let code = ccurl_share_setopt_long(raw, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_SSL_SESSION.rawValue))
        precondition(code == CURLSHE_OK, "curl_share_setopt(CURLSHOPT_SHARE, SSL_SESSION) failed: \(code)")
    }

    /// Runs once no easy handle uses the share any more: each `EasyHandle` given this share holds it until its own
    /// curl_easy_cleanup, so curl_share_cleanup never meets one still attached (CURLSHE_IN_USE).
    deinit { curl_share_cleanup(raw) }
}

@available(*, unavailable)
extension ShareHandle: Sendable {}
