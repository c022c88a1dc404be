/// How long the fetch loop's thread may spend deciding bodies' types at once in one turn of the loop
/// (`BodySniffer.sniff(_:atOnce:completion:)`), and how long it has spent this turn. A check starts only while some of
/// the allowance is left, so a turn spends at most the allowance and one check.
struct SniffingTime {
    /// The time a turn may spend; `.zero` for none.
    let allowance: Duration
    private(set) var spent = Duration.zero
    /// The clock checks are timed by (a test's own, or the continuous clock).
    private let now: () -> ContinuousClock.Instant

    init(allowance: Duration, now: @escaping () -> ContinuousClock.Instant = { .now }) {
        self.allowance = allowance
        self.now = now
    }

    /// A new turn: the whole allowance again.
    mutating func newTurn() {
        spent = .zero
    }

    /// Runs `sniff`, telling it whether it may decide at once (some of the turn's allowance is left), and charges
    /// the time it took when it might.
    mutating func spend<Result>(_ sniff: (_ atOnce: Bool) -> Result) -> Result {
        guard spent < allowance else { return sniff(false) }
        let start = now()
        defer { spent += now() - start }
        return sniff(true)
    }
}
