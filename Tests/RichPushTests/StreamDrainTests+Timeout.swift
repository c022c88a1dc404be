import Foundation
import Testing

/// `stream`'s drain bounded as `serve`'s and `worker`'s: the same `--drain-timeout`, the same runner.
extension StreamDrainTests {
    @Test(
        """
        SIGTERM past --drain-timeout: the payload in flight is cancelled long before its deadline, its result written, \
        exit 0
        """
    )
    func drainTimeout() async throws {
        let bed = try TestBed()
        // The origin holds the response 30 s, within the 60 s deadline: without the drain timeout the drain lasts
        // that long.
        let (process, input, output) = try CLI.start(
            ["stream", "--deadline", "60", "--drain-timeout", "1"] + bed.cliOptions)
        defer { try? input.close() }
        let payload = #"{"aps":{"mutable-content":1},"adb_media":"\#(bed.url("/slow/photo.jpg?ms=30000"))"}"#
        input.write(Data((payload + "\n").utf8))
        try await untilConnected(bed.origin, count: 1)
        let signalled = ContinuousClock.now
        process.terminate()
        let line = try await CLI.readLine(output, within: .seconds(25))
        #expect(try await process.exitStatus("stream", within: .seconds(25)) == 0)
        // 1 s of drain, then the cancellation: the bound leaves a loaded machine ten times that, and stays far
        // below the 30 s the origin holds.
        #expect(ContinuousClock.now - signalled < .seconds(15))
        #expect(line.contains(#""outcome":"cancelled""#), "\(line)")
        #expect(line.contains(#""input":"-:1""#), "\(line)")
    }
}
