import RichPushCore
import Testing

@testable import RichPushFetch

@Suite("Response head: headers read, responses judged by status")
struct ResponseHeadTests {
    /// `head` after taking each of `lines` (CRLF added), and the first failure, if any.
    static func taking(_ lines: [String], into head: inout ResponseHead) -> FetchFailure? {
        for line in lines {
            let failure = Array((line + "\r\n").utf8).withUnsafeBytes { head.take($0) }
            if let failure { return failure }
        }
        return nil
    }

    @Test("keeps the latest response's values, names matched in any case, values trimmed; a status line forgets them")
    func values() {
        var head = ResponseHead(maximumBytes: 10_000)
        let lines = [
            "HTTP/1.1 302 Found", "Location:  /next ", "ETag: \"old\"", "HTTP/1.1 200 OK", "etag: \"v1\"",
            "LAST-MODIFIED: Tue, 01 Dec 2026 10:00:00 GMT", "Retry-After: 30", "X-Location: /not-this",
        ]
        #expect(Self.taking(lines, into: &head) == nil)
        #expect(head.etag == "\"v1\"")
        #expect(head.lastModified == "Tue, 01 Dec 2026 10:00:00 GMT")
        #expect(head.retryAfter == "30")
        #expect(head.location == nil, "a redirect's Location outlived the status line after it")
        #expect(head.validators == Validators(etag: "\"v1\"", lastModified: "Tue, 01 Dec 2026 10:00:00 GMT"))
        #expect(head.bytes == lines.reduce(0) { $0 + $1.utf8.count + 2 })
    }

    @Test(
        """
        a Transfer-Encoding other than chunked is refused at its header (none is asked for, and libcurl 7.88 would \
        decode gzip or deflate); chunked alone, in any case, passes
        """)
    func transferCodings() {
        for value in ["gzip", "gzip, chunked", "deflate,chunked", "chunked, identity", "x-custom", " Chunked ,  br"] {
            var head = ResponseHead(maximumBytes: 10_000)
            let failure = Self.taking(["HTTP/1.1 200 OK", "Transfer-Encoding: \(value)"], into: &head)
            #expect(failure?.code == .badResponse, "\(value)")
            #expect(failure?.detail.contains("only chunked") == true, "\(value)")
        }
        for value in ["chunked", "Chunked", " CHUNKED\t", "chunked,"] {
            var head = ResponseHead(maximumBytes: 10_000)
            #expect(Self.taking(["HTTP/1.1 200 OK", "transfer-encoding: \(value)"], into: &head) == nil, "\(value)")
        }
        var head = ResponseHead(maximumBytes: 10_000)
        #expect(Self.taking(["HTTP/1.1 200 OK", "X-Transfer-Encoding: gzip"], into: &head) == nil)
    }

    @Test(
        """
        a response's Content-Length headers must say one length (RFC 9110, 8.6): two that differ, a list of \
        different lengths or one that is not a length are refused; the same length twice, or a new response's, passes
        """)
    func contentLengths() {
        let refused: [[String]] = [
            ["Content-Length: 100", "Content-Length: 5905"], ["Content-Length: 5905", "content-length: 100"],
            ["Content-Length: 100, 5905"], ["Content-Length: -1"], ["Content-Length: 1e3"], ["Content-Length: "],
            ["Content-Length: 100,"], ["Content-Length: 0x10"],
        ]
        for lines in refused {
            var head = ResponseHead(maximumBytes: 10_000)
            let failure = Self.taking(["HTTP/1.1 200 OK"] + lines, into: &head)
            #expect(failure?.code == .badResponse, "\(lines)")
            #expect(
                failure?.detail.contains("the body's end is not known") == true,
                "\(lines): \(String(describing: failure))")
        }
        let passed: [[String]] = [
            ["Content-Length: 100", "Content-Length: 100"], ["Content-Length: 100 , 100"], ["Content-Length:\t42 "],
            ["Content-Length: 100", "HTTP/1.1 200 OK", "Content-Length: 5905"],
            ["X-Content-Length: 7", "Content-Length: 100"],
        ]
        for lines in passed {
            var head = ResponseHead(maximumBytes: 10_000)
            #expect(Self.taking(["HTTP/1.1 200 OK"] + lines, into: &head) == nil, "\(lines)")
        }
    }

    @Test("the final response's Content-Type is kept as sent, trimmed; a status line or a new hop forgets it")
    func contentType() {
        var head = ResponseHead(maximumBytes: 10_000)
        let lines = ["HTTP/1.1 302 Found", "Content-Type: text/html", "HTTP/1.1 200 OK", "content-TYPE:  Text/Plain "]
        #expect(Self.taking(lines, into: &head) == nil)
        #expect(head.contentType == "Text/Plain")
        #expect(Self.taking(["HTTP/1.1 200 OK", "X-Content-Type: image/png"], into: &head) == nil)
        #expect(head.contentType == nil, "a Content-Type outlived the status line after it")
        #expect(Self.taking(["Content-Type: image/png"], into: &head) == nil)
        head.forgetResponse()
        #expect(head.contentType == nil, "a Content-Type outlived its hop")
        #expect(Self.taking(["Content-Type:   "], into: &head) == nil)
        #expect(head.contentType == nil, "an empty Content-Type is none")
    }

    @Test(
        """
        a Content-Type is kept to its first 256 bytes, cut at a whole character; a control character or a byte that \
        is not UTF-8 becomes U+FFFD
        """,
        arguments: [
            ("image/jpeg; charset=binary", "image/jpeg; charset=binary"),
            (String(repeating: "x", count: 300), String(repeating: "x", count: 256)),
            (String(repeating: "x", count: 255) + "é", String(repeating: "x", count: 255)),
            (String(repeating: "x", count: 254) + "é", String(repeating: "x", count: 254) + "é"),
            ("text/\u{1B}[31mred\u{85}", "text/\u{FFFD}[31mred\u{FFFD}"),
        ])
    func contentTypeBound(sent: String, kept: String) {
        var head = ResponseHead(maximumBytes: 10_000)
        #expect(Self.taking(["Content-Type: " + sent], into: &head) == nil)
        #expect(head.contentType == kept)
        func keeps(_ bytes: [UInt8]) -> String? {
            bytes.withUnsafeBytes { FetchedMedia.Provenance.contentType(sent: $0) }
        }
        #expect(keeps([0x69, 0xFF, 0x6A]) == "i\u{FFFD}j")
        #expect(keeps(Array(repeating: 0xFF, count: 300))?.utf8.count == 255)
        #expect(keeps([]) == nil)
    }

    @Test("the bound counts every response's headers, redirects included")
    func bound() {
        var head = ResponseHead(maximumBytes: 40)
        #expect(Self.taking(["HTTP/1.1 301 Moved", "Location: /a"], into: &head) == nil)
        head.forgetResponse()
        let failure = Self.taking(["HTTP/1.1 200 OK", "ETag: x"], into: &head)
        #expect(failure == FetchFailure(.badResponse, "more than 40 bytes of response headers"))
    }

    @Test(
        "the first body bytes: a redirect's are dropped, a status other than 2xx or a 206 refuses, else taken",
        arguments: [
            (301, "/next", ResponseHead.BodyStart.redirect), (308, "/next", .redirect),
            (302, nil, .refused(FetchFailure(.httpStatus, "HTTP 302", cause: .status(302, retryAfter: "5")))),
            (200, "/ignored", .take), (204, nil, .take),
            (206, nil, .refused(FetchFailure(.httpStatus, "HTTP 206: a partial response to a request for the whole"))),
            (503, nil, .refused(FetchFailure(.httpStatus, "HTTP 503", cause: .status(503, retryAfter: "5")))),
        ] as [(Int, String?, ResponseHead.BodyStart)])
    func bodyStart(status: Int, location: String?, expected: ResponseHead.BodyStart) {
        var head = ResponseHead(maximumBytes: 10_000)
        _ = Self.taking(["Retry-After: 5"] + (location.map { ["Location: \($0)"] } ?? []), into: &head)
        #expect(head.bodyStart(status: status) == expected)
    }

    @Test("a finished response: redirect, not modified only to a conditional fetch, a body, or why there is none")
    func ending() {
        var redirect = ResponseHead(maximumBytes: 10_000)
        _ = Self.taking(["Location: https://example.com/b"], into: &redirect)
        #expect(redirect.ending(status: 307, bodyBegun: false, probe: false, conditional: false) == .redirect)
        let plain = ResponseHead(maximumBytes: 10_000)
        #expect(plain.ending(status: 304, bodyBegun: false, probe: false, conditional: true) == .notModified)
        #expect(
            plain.ending(status: 304, bodyBegun: false, probe: false, conditional: false)
                == .failed(FetchFailure(.httpStatus, "HTTP 304", cause: .status(304, retryAfter: nil))))
        #expect(
            plain.ending(status: 304, bodyBegun: false, probe: true, conditional: true)
                == .failed(FetchFailure(.httpStatus, "HTTP 304", cause: .status(304, retryAfter: nil))))
        #expect(plain.ending(status: 200, bodyBegun: true, probe: false, conditional: false) == .body)
        #expect(
            plain.ending(status: 200, bodyBegun: false, probe: false, conditional: false)
                == .failed(FetchFailure(.emptyBody, "HTTP 200 with no body")))
    }
}
