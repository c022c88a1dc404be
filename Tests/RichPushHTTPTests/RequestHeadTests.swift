import Testing

@testable import RichPushHTTP

/// The head's checks without I/O: what each finding earns.
struct RequestHeadTests {
    static func target(_ text: String) -> RequestTarget {
        Array(text.utf8).withUnsafeBufferPointer { RequestTarget($0) }
    }

    @Test("a target's scan: its query, its arguments at most, an encoded NUL, a space or control byte")
    func targets() {
        let plain = Self.target("/v1/enrich?deadline=1&x=2")
        #expect(plain.bytes == 25)
        #expect(plain.query == 10)
        #expect(plain.arguments == 2)
        #expect(!plain.encodedNUL && !plain.invalidByte)
        #expect(Self.target("/healthz").arguments == 0)
        #expect(Self.target("/healthz?").arguments == 0)
        #expect(Self.target("/a?b&&c&").arguments == 4)
        #expect(Self.target("/a&b?c").arguments == 1, "an & before the query is part of the path")
        #expect(Self.target("/v1/enrich%00/x").encodedNUL)
        #expect(Self.target("/a?x=%00").encodedNUL)
        #expect(Self.target("/a?x=%0").encodedNUL == false)
        #expect(Self.target("/a b").invalidByte)
        #expect(Self.target("/a\u{7F}").invalidByte)
        #expect(Self.target("/a\tb").invalidByte)
    }

    @Test(
        "what each finding earns, in order of precedence",
        arguments: [
            (RequestHead(), nil),
            (
                {
                    var head = RequestHead(); head.target = target("/a%00"); return head
                }(), 400
            ),
            (
                {
                    var head = RequestHead(); head.unaccounted = true; return head
                }(), 400
            ),
            (
                {
                    var head = RequestHead(); head.target.bytes = 16385; return head
                }(), 414
            ),
            (
                {
                    var head = RequestHead(); head.target.arguments = 101; head.bytes = 99999; return head
                }(), 414
            ),
            (
                {
                    var head = RequestHead(); head.target.arguments = 100; head.headerFields = 100; head.bytes = 16384;
                    return head
                }(), nil
            ),
            (
                {
                    var head = RequestHead(); head.bytes = 16385; return head
                }(), 431
            ),
            (
                {
                    var head = RequestHead(); head.headerFields = 101; return head
                }(), 431
            ),
            (
                {
                    var head = RequestHead(); head.invalidName = "a b"; return head
                }(), 400
            ),
            (
                {
                    var head = RequestHead(); head.invalidValue = "x-a"; return head
                }(), 400
            ),
            (
                {
                    var head = RequestHead(); head.repeated = "host"; return head
                }(), 400
            ),
            (
                {
                    var head = RequestHead(); head.transferEncoding = "chunked"; head.contentLength = "5"; return head
                }(), 400
            ),
            (
                {
                    var head = RequestHead(); head.transferEncoding = "gzip"; return head
                }(), 501
            ),
            (
                {
                    var head = RequestHead(); head.transferEncoding = "chunked "; return head
                }(), 501
            ),
            (
                {
                    var head = RequestHead(); head.transferEncoding = "Chunked"; return head
                }(), nil
            ),
            (
                {
                    var head = RequestHead(); head.contentLength = "5"; return head
                }(), nil
            ),
            (
                {
                    var head = RequestHead(); head.contentLength = "18446744073709551616"; return head
                }(), nil
            ),
            (
                {
                    var head = RequestHead(); head.contentLength = "0x10"; return head
                }(), 400
            ),
            (
                {
                    var head = RequestHead(); head.contentLength = ""; return head
                }(), 400
            ),
            // RFC 9112 §3.2: Host is required of HTTP/1.1, not of HTTP/1.0.
            (
                {
                    var head = RequestHead(); head.missingHost = true; return head
                }(), 400
            ),
            (
                {
                    var head = RequestHead(); head.missingHost = true; head.http10 = true; return head
                }(), nil
            ),
            // RFC 9110 §10.1.1: 100-continue, in any case, is the one expectation.
            (
                {
                    var head = RequestHead(); head.expect = "100-Continue"; return head
                }(), nil
            ),
            (
                {
                    var head = RequestHead(); head.expect = "100-continuex"; return head
                }(), 417
            ),
        ] as [(RequestHead, Int?)])
    func refusals(head: RequestHead, status: Int?) {
        let refusal = head.refusal(RequestHead.Limits())
        #expect(refusal?.status == status)
        if let refusal, case .bytes(let body) = refusal.body {
            // Each status its code of the one vocabulary, and a detail.
            let code = [
                400: "bad-request", 414: "target-too-long", 431: "headers-too-large",
                417: "expectation-failed", 501: "unsupported-transfer-coding",
            ][refusal.status]
            #expect(String(decoding: body, as: UTF8.self).hasPrefix("{\"code\":\"\(code ?? "?")\",\"detail\":\""))
        }
    }

    @Test(
        """
        the declared length: decimal digits, and past Int.max (libmicrohttpd takes up to 2^64 - 1) Int.max, over \
        every limit
        """,
        arguments: [
            (nil, nil), ("0", 0), ("1048576", 1_048_576), ("9223372036854775807", Int.max),
            ("9223372036854775808", Int.max), ("18446744073709551615", Int.max),
            ("99999999999999999999999999", Int.max), ("0x10", nil), ("-1", nil), ("", nil),
        ] as [(String?, Int?)])
    func declaredLength(value: String?, length: Int?) {
        var head = RequestHead()
        head.contentLength = value
        #expect(head.declaredLength == length)
    }

    @Test("field names are tokens; values may hold no control character but a tab")
    func fieldSyntax() {
        #expect(RequestHead.isToken(Array("X-Request-Id".utf8)))
        #expect(RequestHead.isToken(Array("a!#$%&'*+-.^_`|~9".utf8)))
        for name in ["", "Content-Length ", " Host", "a:b", "a\u{0}", "é"] {
            #expect(!RequestHead.isToken(Array(name.utf8)), "\(name.debugDescription)")
        }
        #expect(!RequestHead.hasControl(Array("Bearer a\tb ~".utf8)))
        for value in ["a\rb", "a\u{0}", "\u{7F}", "\u{1B}["] {
            #expect(RequestHead.hasControl(Array(value.utf8)), "\(value.debugDescription)")
        }
    }
}
