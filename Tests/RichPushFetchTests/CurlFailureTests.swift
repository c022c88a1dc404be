import CCurl
import RichPushCore
import Testing

@testable import RichPushFetch

@Suite("Curl failure: what curl's result code is reported as")
struct CurlFailureTests {
    static let deadline = ContinuousClock.now + .seconds(10)

    static func failure(
        _ code: CURLcode, message: String = "curl says", at now: ContinuousClock.Instant = deadline - .seconds(5),
        connected: Bool = true, requested: Bool = false, refusals: ConnectionPolicy.Refusals = .init(), bytes: Int = 12
    ) -> FetchFailure {
        CurlFailure(
            code: code, message: message, now: now, deadline: deadline, connected: connected,
            requested: requested, refusals: refusals, bytes: bytes, capBeforeType: 1_000
        ).failure
    }

    @Test(
        """
        what libcurl 7.88 names as the connection's is the answer's when it is: a malformed chunked body \
        (CURLE_RECV_ERROR), a head line over its 100 KB bound (CURLE_OUT_OF_MEMORY before any body byte): \
        bad-response, with no cause to retry
        """)
    func answersCurlMisnames() {
        let message = "Illegal or missing hexadecimal sequence in chunked-encoding"
        let chunked = Self.failure(CURLE_RECV_ERROR, message: message, requested: true)
        #expect(chunked == FetchFailure(.badResponse, message))
        #expect(chunked.cause == nil)
        #expect(Self.failure(CURLE_RECV_ERROR, requested: true).cause == .connectionDropped)
        let line = Self.failure(CURLE_OUT_OF_MEMORY, message: "Out of memory", requested: true, bytes: 0)
        #expect(line.code == .badResponse)
        #expect(line.detail.contains("100 KB"))
        #expect(line.cause == nil)
        #expect(Self.failure(CURLE_OUT_OF_MEMORY, requested: true).code == .network, "once body bytes came")
        #expect(Self.failure(CURLE_OUT_OF_MEMORY, bytes: 0).code == .network, "before the request went out")
    }

    @Test("a timeout at the deadline is the deadline's; before it, a timeout that says whether it had connected")
    func timeout() {
        #expect(
            Self.failure(CURLE_OPERATION_TIMEDOUT, at: Self.deadline - .milliseconds(1))
                == FetchFailure(.expired, "the deadline came first (12 bytes received)"))
        #expect(Self.failure(CURLE_OPERATION_TIMEDOUT) == FetchFailure(.timeout, "curl says"))
        #expect(
            Self.failure(CURLE_OPERATION_TIMEDOUT, connected: false)
                == FetchFailure(.timeout, "curl says", cause: .connectTimeout))
    }

    @Test("a failed connection is the policy's refusal when there was one: the address's before the port's")
    func refused() {
        let both = ConnectionPolicy.Refusals(address: "10.0.0.1 is private", port: 25)
        #expect(
            Self.failure(CURLE_COULDNT_CONNECT, refusals: both) == FetchFailure(.blockedAddress, "10.0.0.1 is private"))
        #expect(
            Self.failure(CURLE_ABORTED_BY_CALLBACK, refusals: .init(port: 25))
                == FetchFailure(.blockedPort, "port 25 is not allowed (see network.allowedPorts)"))
        #expect(Self.failure(CURLE_COULDNT_CONNECT) == FetchFailure(.network, "curl says", cause: .connectionRefused))
        #expect(Self.failure(CURLE_ABORTED_BY_CALLBACK) == FetchFailure(.network, "curl says"))
    }

    @Test(
        "every other code maps to its problem code",
        arguments: [
            (CURLE_RECV_ERROR, "network"), (CURLE_GOT_NOTHING, "network"),
            (CURLE_UNSUPPORTED_PROTOCOL, "blocked-scheme"),
            (CURLE_TOO_MANY_REDIRECTS, "too-many-redirects"), (CURLE_FILESIZE_EXCEEDED, "too-large"),
            (CURLE_PARTIAL_FILE, "bad-response"), (CURLE_WEIRD_SERVER_REPLY, "bad-response"),
            (CURLE_HTTP2_STREAM, "bad-response"), (CURLE_URL_MALFORMAT, "bad-url"),
            (CURLE_PEER_FAILED_VERIFICATION, "tls"), (CURLE_SSL_CACERT_BADFILE, "tls"), (CURLE_SSL_CLIENTCERT, "tls"),
            (CURLE_SSL_CONNECT_ERROR, "tls"),
            (CURLE_COULDNT_RESOLVE_HOST, "network"),
        ])
    func mapped(code: CURLcode, expected: String) {
        #expect(Self.failure(code).code.rawValue == expected)
    }

    @Test(
        """
        an unsupported protocol is the scheme's before any request went out, and the answer's after (libcurl 7.88's \
        code for an answer that is not HTTP: "Received HTTP/0.9 when not allowed")
        """)
    func unsupportedProtocol() {
        #expect(Self.failure(CURLE_UNSUPPORTED_PROTOCOL) == FetchFailure(.blockedScheme, "curl says"))
        #expect(
            Self.failure(CURLE_UNSUPPORTED_PROTOCOL, connected: false) == FetchFailure(.blockedScheme, "curl says"))
        #expect(
            Self.failure(CURLE_UNSUPPORTED_PROTOCOL, requested: true) == FetchFailure(.badResponse, "curl says"))
    }

    @Test(
        """
        a handshake the other end reset or closed is the connection's, dropped (libcurl 7.88's messages for it, seen \
        with the curl tool); one TLS refused stays tls
        """)
    func handshakeDropped() {
        for message in [
            "Recv failure: Connection reset by peer", "Send failure: Broken pipe",
            "OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to 127.0.0.1:443 ",
            "error:0A000126:SSL routines::unexpected eof while reading",
        ] {
            #expect(
                Self.failure(CURLE_SSL_CONNECT_ERROR, message: message)
                    == FetchFailure(.network, message, cause: .connectionDropped))
        }
        let refused = "OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number"
        #expect(Self.failure(CURLE_SSL_CONNECT_ERROR, message: refused) == FetchFailure(.tls, refused))
    }

    @Test("what the transport saw goes with it, for the retry policy")
    func causes() {
        #expect(Self.failure(CURLE_SEND_ERROR).cause == .connectionDropped)
        #expect(Self.failure(CURLE_FILESIZE_EXCEEDED).detail == "declares more than 1000 bytes")
        #expect(Self.failure(CURLE_PARTIAL_FILE).detail == "the body ended before its declared length: curl says")
    }
}
