import Foundation
import RichPushTestSupport
import Testing

@testable import richpush

@Suite("CLI: freed memory kept for the next body")
struct FreedMemoryTests {
    @Test("a GLIBC_TUNABLES that sets either threshold wins: nothing is changed then")
    func userSettingsWin() {
        #expect(FreedMemory.shouldSet(tunables: nil))
        #expect(FreedMemory.shouldSet(tunables: ""))
        #expect(FreedMemory.shouldSet(tunables: "glibc.pthread.rseq=0"))
        #expect(!FreedMemory.shouldSet(tunables: "glibc.malloc.trim_threshold=131072"))
        #expect(!FreedMemory.shouldSet(tunables: "glibc.pthread.rseq=0:glibc.malloc.mmap_threshold=65536"))
    }

    /// 100 KB bodies, each held in memory until complete (below glibc's first mmap threshold, so glibc never raises
    /// its thresholds on its own): with glibc's 128 KiB trim threshold the freed top of the arena goes back to the
    /// kernel and the next body faults it in again. Measured (release build, the benchmark's 2,000 payloads): 11,900
    /// minor faults with glibc's settings, 4,200 with ours, of which 1,200 are start-up.
    @Test("a stream of held bodies faults fewer pages than with glibc's trim threshold")
    func fewerFaults() async throws {
        let bed = try TestBed()
        let count = 500
        let payloads = (0..<count).map { index in
            let url = bed.url("/generated?prefix=photo.jpg&bytes=100000&n=\(index)")
            return #"{"aps":{"mutable-content":1},"adb_media":"\#(url)"}"#
        }
        let input = Array(payloads.joined(separator: "\n").utf8)
        let arguments = ["stream", "--concurrency", "16"] + bed.cliOptions
        func faults(_ environment: [String: String]) async throws -> Int {
            let finished = try await offPool {
                try ChildProcess.runToEnd(CLI.binary, arguments, environment: environment, input: input)
            }
            #expect(finished.status == 0, "\(finished.errorsText)")
            let lines = finished.outputText.split(separator: "\n")
            #expect(lines.count == count)
            #expect(lines.allSatisfy { $0.contains(#""outcome":"complete""#) })
            return finished.minorFaults
        }
        // glibc's own trim threshold, set through GLIBC_TUNABLES: the CLI then leaves the allocator alone.
        let glibcs = try await faults(["GLIBC_TUNABLES": "glibc.malloc.trim_threshold=131072"])
        let ours = try await faults([:])
        #expect(ours + count < glibcs, "minor faults: \(ours) with the CLI's settings, \(glibcs) with glibc's")
    }
}
