import Foundation
import Glibc
import Testing

@testable import richpush

/// The CLI's, not Foundation's.
private typealias Progress = richpush.Progress

@Suite("CLI progress line")
struct ProgressTests {
    @Test("done/total and rate; a stream shows its count")
    func line() {
        #expect(Progress.line(done: 500, total: 2000, elapsed: .seconds(2)).hasPrefix("500/2000 payloads, 250/s"))
        #expect(Progress.line(done: 30, total: nil, elapsed: .milliseconds(1500)).hasPrefix("30 payloads, 20/s"))
        #expect(Progress.line(done: 0, total: 5, elapsed: .zero).hasPrefix("0/5 payloads, 0/s"))
    }

    @Test("drawn only for a terminal and more than one input, on stderr: stdout stays one result per line")
    func gating() async throws {
        #expect(!Progress.shouldShow(inputs: 1))
        #expect(Progress.shouldShow(inputs: 100) == (isatty(2) == 1))
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let inputs = try ["adobe-photo.json", "zego-object.json", "no-media.json"].map {
            try bed.payloadFile($0, directory: directory)
        }
        let many = try await CLI.runOnTerminal(["enrich"] + bed.cliOptions + inputs, output: directory + "/many.ndjson")
        #expect(many.status == 0)
        #expect(many.stdout.contains("3/3 payloads"), "the terminal showed: \(many.stdout)")
        let results = try String(contentsOfFile: directory + "/many.ndjson", encoding: .utf8).split(separator: "\n")
        #expect(results.count == 3)
        #expect(results.allSatisfy { $0.hasPrefix(#"{"input":"#) && !$0.contains("payloads,") })
        let one = try await CLI.runOnTerminal(
            ["enrich"] + bed.cliOptions + [inputs[0]], output: directory + "/one.ndjson")
        #expect(one.status == 0)
        #expect(!one.stdout.contains("payloads"), "one input, yet the terminal showed: \(one.stdout)")
        let piped = try await CLI.run(["enrich"] + bed.cliOptions + inputs)
        #expect(piped.status == 0)
        #expect(piped.stderr.isEmpty, "stderr is a pipe, yet it got: \(piped.stderr)")
    }

    @Test("redrawn at most five times a second; the last line counts every payload")
    func rate() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let count = 3000
        try Data(String(repeating: #"{"aps":{}}"# + "\n", count: count).utf8)
            .write(to: URL(fileURLWithPath: directory + "/in.ndjson"))
        let start = ContinuousClock.now
        let run = try await CLI.runOnTerminal(
            ["stream"], input: directory + "/in.ndjson", output: directory + "/out.ndjson")
        let elapsed = ContinuousClock.now - start
        #expect(run.status == 0)
        let draws = run.stdout.components(separatedBy: " payloads, ").count - 1
        // The first advance draws at once, then one per 200 ms that passed, then the final line; `elapsed` (the
        // whole run, start-up included) is at least the time the drawing had.
        #expect((2...(Int(elapsed / .milliseconds(200)) + 2)).contains(draws), "\(draws) draws in \(elapsed)")
        #expect(run.stdout.contains("\(count) payloads, "), "the terminal showed: \(run.stdout)")
    }
}
