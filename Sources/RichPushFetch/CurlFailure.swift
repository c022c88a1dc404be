internal import CCurl
import RichPushCore

/// What a curl result code means for a fetch: the `FetchFailure` reported, from curl's code and message and what
/// the transfer saw (when, whether it connected, what the connection policy refused). Pure: every value comes in.
struct CurlFailure {
    /// curl's result code for the request (never CURLE_OK).
    var code: CURLcode
    /// curl's message (its error buffer, else the code's generic text).
    var message: String
    /// When curl stopped, and the transfer's deadline: a timeout within 2 ms of the deadline is the deadline's.
    var now: ContinuousClock.Instant
    var deadline: ContinuousClock.Instant
    /// Whether the request had a connection (CURLINFO_CONNECT_TIME_T > 0).
    var connected: Bool
    /// Whether the hop's request went out: curl's pre-request callback approved its connection (a reused one too).
    var requested = false
    /// What the connection policy refused on this hop.
    var refusals: ConnectionPolicy.Refusals
    /// How refusals name the settings that would lift them.
    var names = SettingNames()
    /// Body bytes received.
    var bytes: Int
    /// The largest a body may be before its type is known (CURLOPT_MAXFILESIZE_LARGE).
    var capBeforeType: Int

    /// The failure reported.
    var failure: FetchFailure {
        switch CurlTLSFailure(code: code.rawValue, message: message) {
        case .refused?: return FetchFailure(.tls, message)
        case .dropped?: return FetchFailure(.network, message, cause: .connectionDropped)
        case nil: break
        }
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            if now >= deadline - .milliseconds(2) {
                return FetchFailure(.expired, "the deadline came first (\(bytes) bytes received)")
            }
            return FetchFailure(.timeout, message, cause: connected ? nil : .connectTimeout)
        case CURLE_COULDNT_CONNECT, CURLE_ABORTED_BY_CALLBACK:
            if let address = refusals.address { return FetchFailure(.blockedAddress, address) }
            if let port = refusals.port {
                return FetchFailure(.blockedPort, "port \(port) is not allowed (see \(names["network.allowedPorts"]))")
            }
            return FetchFailure(.network, message, cause: code == CURLE_COULDNT_CONNECT ? .connectionRefused : nil)
        case CURLE_RECV_ERROR where message.contains("in chunked-encoding"):
            // libcurl 7.88 gives a malformed chunked body this code too ("Illegal or missing hexadecimal sequence in
            // chunked-encoding"): the origin's answer, not the connection's, so not retried.
            return FetchFailure(.badResponse, message)
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING:
            return FetchFailure(.network, message, cause: .connectionDropped)
        case CURLE_UNSUPPORTED_PROTOCOL:
            // libcurl 7.88 gives this code to an answer that is not HTTP too ("Received HTTP/0.9 when not
            // allowed": no status line, or leftover bytes on a reused connection), after the request went out; a
            // scheme it refuses (CURLOPT_PROTOCOLS_STR) is refused before any request.
            return FetchFailure(requested ? .badResponse : .blockedScheme, message)
        case CURLE_TOO_MANY_REDIRECTS:
            return FetchFailure(.tooManyRedirects, message)
        case CURLE_FILESIZE_EXCEEDED:
            return FetchFailure(.tooLarge, "declares more than \(capBeforeType) bytes")
        case CURLE_PARTIAL_FILE:
            return FetchFailure(.badResponse, "the body ended before its declared length: \(message)")
        case CURLE_WEIRD_SERVER_REPLY, CURLE_BAD_CONTENT_ENCODING, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            return FetchFailure(.badResponse, message)
        case CURLE_OUT_OF_MEMORY where requested && bytes == 0:
            // libcurl 7.88's answer to a line of a response's head over its 100 KB bound (its buffer refuses to grow
            // past it), before the bound of `ResponseHead` on all the lines together sees it.
            return FetchFailure(
                .badResponse, "a line of the response's head is longer than libcurl's 100 KB bound (curl: \(message))")
        case CURLE_URL_MALFORMAT:
            return FetchFailure(.badURL, message)
        default:
            return FetchFailure(.network, message)
        }
    }
}

/// What a failed libcurl transfer says of TLS, for every transfer of ours (the fetch loop's and the S3 publisher's):
/// `refused` when TLS refused the peer (an untrusted or invalid certificate, a handshake TLS failed), `dropped` when
/// the connection went during the handshake, reset or closed by the other end (a server restarting, a balancer
/// dropping it: the connection's failure, as a drop after the handshake is, retried as one), nil for another failure.
package enum CurlTLSFailure: Sendable {
    case refused, dropped

    /// libcurl 7.88 gives a dropped handshake CURLE_SSL_CONNECT_ERROR, as a refused one; its message tells them
    /// apart. With OpenSSL 3 it says "Recv failure: Connection reset by peer" (or "Send failure: ...") for a reset,
    /// "SSL_ERROR_SYSCALL" for a close, and "unexpected eof while reading" where OpenSSL names the close itself (each
    /// seen with the curl tool against a server that accepted and then reset or closed). `code` is the CURLcode's raw
    /// value (the modules that call this import CCurl privately).
    package init?(code: UInt32, message: String) {
        switch CURLcode(rawValue: code) {
        case CURLE_SSL_CONNECT_ERROR
        where message.contains("Recv failure") || message.contains("Send failure")
            || message.contains("SSL_ERROR_SYSCALL") || message.contains("unexpected eof"):
            self = .dropped
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_CLIENTCERT:
            self = .refused
        default:
            return nil
        }
    }
}
