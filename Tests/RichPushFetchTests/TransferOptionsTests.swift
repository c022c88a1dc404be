import Testing

@testable import RichPushFetch

@Suite("Transfer options: each hop's time left")
struct TransferOptionsTests {
    @Test("a hop's timeout is the time left, never 0 (no timeout at all in curl), even past the deadline")
    func timeout() {
        let now = ContinuousClock.now
        let url = "https://example.com/a.jpg"
        let later = TransferOptions.Hop(url: url, deadline: now + .milliseconds(1_500), now: now)
        #expect(later.timeoutMilliseconds == 1_500)
        #expect(TransferOptions.Hop(url: url, deadline: now + .microseconds(300), now: now).timeoutMilliseconds == 1)
        #expect(TransferOptions.Hop(url: url, deadline: now - .seconds(1), now: now).timeoutMilliseconds == 1)
    }
}
