import Foundation
import Testing

@testable import RichPushServer

/// The service's access log line and the request ids it assigns (no I/O).
@Suite struct AccessLogTests {
    static func decode(_ line: [UInt8]) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
    }

    @Test("one JSON line per request: method, path, status, request id, outcome, elapsed milliseconds")
    func fullLine() throws {
        var entry = HTTPResponse.Log()
        entry.requestID = "push-42"
        entry.outcome = "complete"
        let request = HTTPRequest(method: "POST", path: "/v1/enrich", headers: [:], query: [:])
        let line = EnrichmentService.accessLogLine(request, status: 200, entry: entry, elapsed: .milliseconds(1234))
        #expect(line.last == 0x0A)
        #expect(line.filter { $0 == 0x0A }.count == 1)
        let expected =
            #"{"method":"POST","path":"/v1/enrich","status":200,"request_id":"push-42","outcome":"complete","#
            + #""elapsed_ms":1234}"# + "\n"
        #expect(String(decoding: line, as: UTF8.self) == expected)
    }

    @Test("a path with quotes, backslashes and control characters stays one valid JSON line; no id, no outcome")
    func escapedPath() throws {
        let path = "/a\"b\\c\nd\u{01}é"
        let request = HTTPRequest(method: "GET", path: path, headers: [:], query: [:])
        let line = EnrichmentService.accessLogLine(request, status: 404, entry: HTTPResponse.Log(), elapsed: .zero)
        #expect(line.filter { $0 == 0x0A }.count == 1)
        let object = try Self.decode(line)
        #expect(object["path"] as? String == path)
        #expect(object["status"] as? Int == 404)
        #expect(object["elapsed_ms"] as? Int == 0)
        #expect(object["request_id"] == nil)
        #expect(object["outcome"] == nil)
    }

    @Test("assigned request ids are distinct, share the process's prefix, and differ between services")
    func requestIDs() {
        let ids = RequestIDs()
        let drawn = (0..<1000).map { _ in ids.next() }
        #expect(Set(drawn).count == drawn.count)
        let prefixes = Set(drawn.map { $0.split(separator: "-")[0] })
        #expect(prefixes.count == 1)
        #expect(prefixes.first?.count == 16)
        #expect(drawn.allSatisfy { $0.utf8.allSatisfy { (0x21...0x7E).contains($0) } })
        #expect(!RequestIDs().next().hasPrefix(String(prefixes.first!)))
    }
}
