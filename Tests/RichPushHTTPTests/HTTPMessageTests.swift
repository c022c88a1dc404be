import Testing

@testable import RichPushHTTP

/// The request's media type, compared on its bytes (no I/O).
@Suite struct HTTPMessageTests {
    static func request(contentType: String?) -> HTTPRequest {
        HTTPRequest(
            method: "POST", path: "/v1/enrich", headers: contentType.map { ["content-type": $0] } ?? [:], query: [:])
    }

    @Test(
        "the media type matches without regard to case, parameters or surrounding spaces",
        arguments: [
            ("application/x-ndjson", true),
            ("Application/X-NDJSON", true),
            ("application/x-ndjson; charset=utf-8", true),
            ("  application/x-ndjson\t;charset=utf-8", true),
            ("application/x-ndjsonx", false),
            ("application/json", false),
            ("application/x-ndjso", false),
            ("x-ndjson", false),
            ("", false),
            (";application/x-ndjson", false),
        ])
    func mediaType(value: String, matches: Bool) {
        #expect(Self.request(contentType: value).hasMediaType("application/x-ndjson") == matches)
    }

    @Test("no Content-Type matches no media type")
    func noContentType() {
        #expect(!Self.request(contentType: nil).hasMediaType("application/json"))
    }

    @Test("a header field given more than once answers its last value; one never given, nil")
    func repeatedField() {
        var headers = HTTPHeaders()
        headers.append(name: "accept", value: "text/plain")
        headers.append(name: "host", value: "example.test")
        headers.append(name: "accept", value: "application/json")
        #expect(headers["accept"] == "application/json")
        #expect(headers["host"] == "example.test")
        #expect(headers["Accept"] == nil, "names are given and asked for in lowercase")
        #expect(headers["x-request-id"] == nil)
        #expect(headers.count == 3)
        // An empty value is a value; a value's bytes come back as given (UTF-8 over ASCII too); a name that is a
        // prefix of another's is not it.
        headers.append(name: "x-empty", value: "")
        headers.append(name: "x-city", value: "Zürich")
        #expect(headers["x-empty"] == "")
        #expect(headers["x-city"] == "Zürich")
        #expect(headers["x-cit"] == nil)
        #expect(headers["accept"] == "application/json")
        let literal: HTTPHeaders = ["content-type": "application/json", "host": "h"]
        #expect(literal["content-type"] == "application/json")
        #expect(literal["host"] == "h")
        #expect(literal.count == 2)
    }
}
