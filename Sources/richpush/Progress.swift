import RichPush

#if canImport(Glibc)
    import Glibc
#endif

/// Progress on standard error (done/total and rate), shown only when standard error is a terminal and there
/// are many inputs; redrawn at most five times a second, on one line.
final class Progress {
    private let total: Int?
    private let enabled: Bool
    private let start = ContinuousClock.now
    private var last = ContinuousClock.now - .seconds(1)
    private(set) var done = 0

    /// - Parameters:
    ///   - total: the number of inputs when known (`enrich`), nil for a stream.
    ///   - enabled: whether to draw; see `shouldShow`.
    init(total: Int?, enabled: Bool) {
        self.total = total
        self.enabled = enabled
    }

    /// Whether progress belongs on this standard error: a terminal, and more than one input (or a stream).
    static func shouldShow(inputs: Int?) -> Bool {
        isatty(2) == 1 && (inputs ?? 2) > 1
    }

    /// Counts one finished input and redraws when due.
    func advance() {
        done += 1
        guard enabled else { return }
        let now = ContinuousClock.now
        guard now - last >= .milliseconds(200) else { return }
        last = now
        Output.write(Array(("\r" + Self.line(done: done, total: total, elapsed: now - start)).utf8), to: 2)
    }

    /// Draws the final line and ends it.
    func finish() {
        guard enabled, done > 0 else { return }
        Output.write(Array(("\r" + Self.line(done: done, total: total, elapsed: .now - start) + "\n").utf8), to: 2)
    }

    /// `1234/5000 payloads, 812/s` (or `1234 payloads, 812/s` for a stream), padded to clear the old line.
    static func line(done: Int, total: Int?, elapsed: Duration) -> String {
        let seconds = elapsed.inSeconds
        let rate = seconds > 0 ? Int((Double(done) / seconds).rounded()) : 0
        let count = total.map { "\(done)/\($0)" } ?? "\(done)"
        return "\(count) payloads, \(rate)/s   "
    }
}
