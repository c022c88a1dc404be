/// Exponential backoff with jitter for reconnecting: 100 ms doubling to 5 s, each wait between half and all of
/// the current step (so that many workers do not reconnect in step after a restart). The waiting is the caller's:
/// the worker waits on its state, so that a drain ends a wait at once.
struct Backoff {
    private(set) var current: Duration = .milliseconds(100)
    static let ceiling: Duration = .seconds(5)

    mutating func reset() { current = .milliseconds(100) }

    /// The wait before the next attempt, between half and all of the current step; the step then doubles.
    mutating func next() -> Duration {
        let milliseconds = current.inMilliseconds
        current = min(current * 2, Self.ceiling)
        return .milliseconds(milliseconds / 2 + Int.random(in: 0...(milliseconds / 2)))
    }
}
