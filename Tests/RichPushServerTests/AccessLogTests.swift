import Foundation
import RichPushHTTP
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
        // A response not sent whole says why, before the time.
        entry.incomplete = "client-closed"
        let cut = EnrichmentService.accessLogLine(request, status: 200, entry: entry, elapsed: .milliseconds(7))
        #expect(
            String(decoding: cut, as: UTF8.self)
                == #"{"method":"POST","path":"/v1/enrich","status":200,"request_id":"push-42","outcome":"complete","#
                + #""incomplete":"client-closed","elapsed_ms":7}"# + "\n")
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

    @Test("the drain's report: a JSON line per request cut off, a path escaped, then the drain's own line")
    func drainLines() throws {
        let report = ServiceHost.DrainReport(
            cutOff: [
                .init(
                    method: "POST", path: "/v1/enrich", requestID: "a", stage: "sending-response", sentBytes: 42,
                    elapsed: .milliseconds(5100)),
                .init(
                    method: "GET", path: "/v1/attachments/\"x\n", requestID: nil, stage: "sending-response",
                    sentBytes: nil, elapsed: .milliseconds(7)),
            ],
            elapsed: .milliseconds(3012))
        let lines = EnrichmentService.drainLines(report).split(separator: 0x0A).map(Array.init)
        #expect(lines.count == 3)
        let first = try Self.decode(lines[0])
        #expect(first["drain"] as? String == "cut-off")
        #expect(first["request_id"] as? String == "a")
        #expect(first["sent_bytes"] as? Int == 42)
        #expect(first["elapsed_ms"] as? Int == 5100)
        let second = try Self.decode(lines[1])
        #expect(second["path"] as? String == "/v1/attachments/\"x\n")
        #expect(second["request_id"] == nil && second["sent_bytes"] == nil)
        let done = try Self.decode(lines[2])
        #expect(done["drain"] as? String == "done")
        #expect(done["cut_off"] as? Int == 2)
        #expect(done["elapsed_ms"] as? Int == 3012)
        let clean = EnrichmentService.drainLines(ServiceHost.DrainReport(cutOff: [], elapsed: .milliseconds(1)))
        #expect(try Self.decode(clean.dropLast().map { $0 })["cut_off"] as? Int == 0)
    }
}
