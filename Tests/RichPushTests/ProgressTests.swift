import Glibc
import Testing

@testable import richpush

@Suite("CLI progress line")
struct ProgressTests {
    @Test("done/total and rate; a stream shows its count")
    func line() {
        #expect(Progress.line(done: 500, total: 2000, elapsed: .seconds(2)).hasPrefix("500/2000 payloads, 250/s"))
        #expect(Progress.line(done: 30, total: nil, elapsed: .milliseconds(1500)).hasPrefix("30 payloads, 20/s"))
        #expect(Progress.line(done: 0, total: 5, elapsed: .zero).hasPrefix("0/5 payloads, 0/s"))
    }

    @Test("drawn only for a terminal and more than one input")
    func gating() {
        #expect(Progress.shouldShow(inputs: 100) == (isatty(2) == 1))
        #expect(!Progress.shouldShow(inputs: 1))
        let progress = Progress(total: 3, enabled: false)
        progress.advance()
        progress.finish()
        #expect(progress.done == 1)
    }
}
