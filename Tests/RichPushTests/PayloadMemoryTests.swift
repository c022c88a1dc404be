import Foundation
import Testing

@testable import RichPush
@testable import RichPushCore

/// Memory per payload in flight (issue 8: 64 payloads of 1 MiB took 775 MB, a parsed payload 6 to 16 times its
/// text). The bound: a parsed payload is its text plus a tape of at most 4 bytes per byte of text.
@Suite("Payload memory")
struct PayloadMemoryTests {
    /// A compact payload of just under `size` bytes: many small objects of short strings, its media at `url`.
    static func largePayload(url: String, size: Int = (1 << 20) - 1024) -> String {
        var text = #"{"aps":{"alert":"big","mutable-content":1},"adb_media":"\#(url)","items":["#
        var index = 0
        while text.utf8.count < size - 64 {
            text += (index > 0 ? "," : "") + #"{"id":"i\#(index)","title":"title \#(index % 1000)","u":"/p/\#(index)"}"#
            index += 1
        }
        return text + "]}"
    }

    /// The process's peak resident set (VmHWM), in bytes.
    static func peakResident(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") })
        return try #require(Int(line.split(separator: " ")[1])) * 1024
    }

    @Test("16 payloads of 1 MiB in flight in richpush stream take under 2.5 MiB each")
    func streamInFlight() async throws {
        let bed = try TestBed()
        let count = 16
        // A 5 s deadline against media that never comes: every payload stays in flight until it expires.
        let (process, writer, reader) = try CLI.start(
            ["stream", "--concurrency", "\(count)", "--deadline", "5"] + bed.cliOptions)
        defer { if process.isRunning { process.terminate() } }
        let (baseline, peak, outcomes) = try await offPool { () throws -> (Int, Int, [String]) in
            var output = Output()
            // The process as it is once it has handled one small payload: the baseline.
            writer.write(Data((#"{"aps":{"mutable-content":1}}"# + "\n").utf8))
            output.read(from: reader, until: 1)
            let baseline = try Self.peakResident(process.processIdentifier)
            let payloads = (0..<count).map { Self.largePayload(url: bed.url("/stall?n=\($0)")) + "\n" }
            let writing = Thread { for payload in payloads { writer.write(Data(payload.utf8)) } }
            writing.start()
            output.read(from: reader, until: 1 + count)
            let peak = try Self.peakResident(process.processIdentifier)
            try writer.close()
            let outcomes = output.received.split(separator: 0x0A).dropFirst().compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any])?["outcome"] as? String
            }
            return (baseline, peak, outcomes)
        }
        process.waitUntilExit()
        #expect(outcomes == Array(repeating: "expired", count: count))
        let perPayload = Double(peak - baseline) / Double(count) / Double(1 << 20)
        #expect(perPayload < 2.5, "each 1 MiB payload in flight took \(perPayload) MiB")
    }

    /// What the CLI wrote, read until it has written so many lines.
    struct Output {
        var received: [UInt8] = []
        var lines = 0

        mutating func read(from reader: FileHandle, until total: Int) {
            while lines < total {
                let data = reader.availableData
                if data.isEmpty { return }
                // Only the new bytes are scanned: searching all of 16 MiB on every read is slow in a debug build.
                data.withUnsafeBytes { chunk in
                    for byte in chunk where byte == 0x0A { lines += 1 }
                }
                received += data
            }
        }
    }

    @Test(
        "the tape takes at most 4 bytes per byte of text, whatever the shape",
        arguments: [
            "[" + Array(repeating: "[]", count: 50_000).joined(separator: ",") + "]",
            "[" + Array(repeating: "0", count: 50_000).joined(separator: ",") + "]",
            "{" + Array(repeating: #""":{}"#, count: 50_000).joined(separator: ",") + "}",
            String(repeating: "[", count: 64) + String(repeating: "]", count: 64),
        ])
    func tapeBound(_ text: String) throws {
        var limits = JSONParser.Limits()
        limits.maximumBytes = 1 << 22
        let document: JSONDocument
        switch try JSONParser(limits: limits).parse(Array(text.utf8)) {
        case .array(let array): document = try #require(Self.document(array.storage))
        case .object(let object): document = try #require(Self.document(object.storage))
        default: throw PayloadError(.notJSON, "expected a container")
        }
        // One entry at most per byte of text, and little spare; the text itself with at most an eighth spare.
        let bytes = text.utf8.count
        #expect(document.tape.count <= bytes)
        #expect(document.tape.capacity <= document.tape.count + 32)
        #expect(document.text.capacity <= bytes + bytes / 8 + 32)
    }

    static func document(_ storage: JSONArray.Storage) -> JSONDocument? {
        if case .parsed(let document, _) = storage { return document }
        return nil
    }

    static func document(_ storage: JSONObject.Storage) -> JSONDocument? {
        if case .parsed(let document, _) = storage { return document }
        return nil
    }
}
