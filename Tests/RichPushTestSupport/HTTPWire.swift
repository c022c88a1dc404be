import Foundation

/// Raw HTTP/1.1 heads for the server's tests: heads of a given size, requests framed two ways, odd but valid
/// shapes, and one exchange on a new connection. Shared by the in-process HTTP core's suites and `serve`'s.
package enum HTTPWire {
    /// A request head of exactly `bytes` bytes (when it can be made that long): the request line with `arguments`
    /// query arguments, then `fields` header fields (Host first), the last padded.
    /// A GET of `path` with `count` one-letter arguments (`?a&a&a...`): short enough for a connection's memory, too
    /// many for its records of arguments.
    package static func oneLetterArguments(_ count: Int, path: String = "/healthz") -> [UInt8] {
        Array(
            "GET \(path)?\(Array(repeating: "a", count: count).joined(separator: "&")) HTTP/1.1\r\nHost: x\r\n\r\n".utf8
        )
    }

    package static func head(
        bytes: Int? = nil, arguments: Int = 0, fields: Int = 1, method: String = "GET", path: String = "/healthz",
        extra: [String] = []
    ) -> [UInt8] {
        let query = arguments == 0 ? "" : "?" + (0..<arguments).map { "a\($0)=1" }.joined(separator: "&")
        let line = "\(method) \(path)\(query) HTTP/1.1\r\n"
        var lines = ["Host: x"] + extra + (0..<max(0, fields - 1 - extra.count)).map { "X-\($0): y" }
        var text = line + lines.map { $0 + "\r\n" }.joined() + "\r\n"
        if let bytes, text.utf8.count < bytes {
            lines[lines.count - 1] += String(repeating: "y", count: bytes - text.utf8.count)
            text = line + lines.map { $0 + "\r\n" }.joined() + "\r\n"
        }
        return Array(text.utf8)
    }

    /// Sends `bytes` on a new connection: the response (nil when the connection closed first) and, when
    /// `waitingForClose`, whether the server then closed the connection (within a bound: false after it).
    package static func exchange(_ bytes: [UInt8], port: Int, waitingForClose: Bool = true) throws -> (
        reply: HTTPReply?, closed: Bool
    ) {
        let connection = try HTTPConnection(port: port)
        try connection.send(bytes)
        guard let reply = try connection.responseOrClose(within: .seconds(10)) else { return (nil, true) }
        return (reply, waitingForClose && ((try? connection.isClosed(within: .seconds(10))) ?? false))
    }

    /// Requests framed two ways, with bytes a field does not account for, or declaring a length past every limit:
    /// what each earns.
    package static let framingCases: [(String, String, Int)] = [
        (
            "Content-Length and Transfer-Encoding",
            "POST /v1/enrich HTTP/1.1\r\nHost: x\r\nContent-Length: 44\r\nTransfer-Encoding: "
                + "chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
            400
        ),
        (
            "Transfer-Encoding and Content-Length",
            "POST /v1/enrich HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: "
                + "3\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
            400
        ),
        (
            "two different Content-Lengths",
            "POST /v1/enrich HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 38\r\n\r\nGET /smuggled "
                + "HTTP/1.1\r\nHost: x\r\n\r\n",
            400
        ),
        (
            "two equal Content-Lengths",
            "POST /v1/enrich HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", 400
        ),
        (
            // RFC 9112, 6.1: an HTTP/1.0 proxy reads no body here, and the chunks after the head as a request.
            "Transfer-Encoding in HTTP/1.0",
            "POST /v1/enrich HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
            400
        ),
        ("Transfer-Encoding gzip", "POST /v1/enrich HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        (
            "Transfer-Encoding gzip, chunked",
            "POST /v1/enrich HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501
        ),
        (
            "whitespace before a colon",
            "POST /v1/enrich HTTP/1.1\r\nHost: x\r\nContent-Length : 38\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: "
                + "x\r\n\r\n",
            400
        ),
        ("a folded header", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: b\r\n c\r\n\r\n", 400),
        ("an encoded NUL in the path", "GET /v1/enrich%00/x HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("an encoded NUL in the query", "GET /healthz?deadline=1%00x HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("a NUL byte in the path", "GET /healthz\u{0}/x HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("a NUL byte in a header value", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: a\u{0}b\r\n\r\n", 400),
        ("a NUL byte before the line end", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: b\u{0}\r\n\r\n", 400),
        ("a lone CR in a header value", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: b\rc\r\n\r\n", 400),
        ("a space in the target", "GET /healthz /x HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (
            "two Authorization headers",
            "GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n", 400
        ),
        ("two Host headers", "GET /healthz HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400),
        // RFC 9110 §10.1.1: libmicrohttpd sends 100 for 100-continue alone; the client of another waited for it.
        (
            "an Expect other than 100-continue",
            "POST /v1/enrich HTTP/1.1\r\nHost: x\r\nExpect: 100-continuex\r\nContent-Length: 38\r\n\r\n", 417
        ),
        (
            "Expect: 100-continue with a trailing space",
            "POST /v1/enrich HTTP/1.1\r\nHost: x\r\nExpect: 100-continue \r\nContent-Length: 38\r\n\r\n", 417
        ),
        (
            "two Expects",
            "POST /v1/enrich HTTP/1.1\r\nHost: x\r\nExpect: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n",
            400
        ),
        ("HTTP/1.1 without Host", "GET /healthz HTTP/1.1\r\nX-A: b\r\n\r\n", 400),
        ("HTTP/1.0 without Host", "GET /healthz HTTP/1.0\r\n\r\n", 200),
        ("two X-Request-Ids", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: a\r\nx-request-id: b\r\n\r\n", 400),
        (
            "two Content-Types",
            "POST /v1/enrich HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Type: "
                + "application/x-ndjson\r\nContent-Length: 2\r\n\r\n{}",
            400
        ),
        // libmicrohttpd takes a length up to 2^64 - 1; past 2^63 it does not fit an Int, and was read as none.
        (
            "a Content-Length of 2^63",
            "POST /v1/enrich HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775808\r\n\r\n{", 413
        ),
        (
            "a Content-Length of 2^64 - 1",
            "POST /v1/enrich HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551615\r\n\r\n{", 413
        ),
    ]

    /// Heads well-formed in odd but valid shapes: bare LFs, tabs, empty values, extra spaces, a leading empty
    /// line, repeated headers that may repeat.
    package static let validCases: [String] = [
        "GET /healthz HTTP/1.1\nHost: x\nX-A:   b  \n\n",
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A:\t\tb\r\nX-B:\r\n\r\n",
        "GET  /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /healthz?deadline=1&&x=%41+b HTTP/1.1\r\nhost: x\r\nauthorization: Bearer a\r\nUser-Agent: "
            + "a\r\nuser-agent: b\r\n\r\n",
        "\r\nGET /healthz HTTP/1.0\r\n\r\n",
    ]
}
