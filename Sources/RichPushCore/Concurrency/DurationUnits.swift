/// The conversions of `Duration` the engine, the service and the worker share.
extension Duration {
    /// The duration in seconds, fractions included.
    package var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// The duration in whole milliseconds (truncated), `Int.max` or `Int.min` at most: a duration of `Int64.max`
    /// seconds (a caller's "no deadline") trapped the process here.
    package var inMilliseconds: Int {
        let (whole, overflowed) = Int(components.seconds).multipliedReportingOverflow(by: 1000)
        guard !overflowed else { return components.seconds < 0 ? .min : .max }
        let (total, over) = whole.addingReportingOverflow(Int(components.attoseconds / 1_000_000_000_000_000))
        return over ? (whole < 0 ? .min : .max) : total
    }

    /// The furthest a deadline is kept from now: a day, beyond any push's life (as far as
    /// `Enricher.Configuration.timeoutRange` goes). A caller's deadline further off (`.now + .seconds(Int64.max)` for
    /// "no deadline") is taken as a day from now, so that every conversion of the time left (libcurl's and libvips's
    /// milliseconds, a child's CPU seconds) stays in range.
    package static let furthestDeadline = Duration.seconds(86_400)

    /// The deadline a request (`?deadline=`) or a queue entry (`deadline`) asks for, `text` in seconds, within the
    /// configured one: to the millisecond, never longer than `limit` (compared in seconds first, so no conversion
    /// can overflow) and never zero. Nil when `text` is not a positive, finite, decimal number of seconds (digits, a
    /// point, an exponent: `Double`'s parser alone also took hexadecimal, `0x10` as 16 s): the service refuses the
    /// request (400), the worker the entry (an `invalid` result), both with `refusal(ofDeadline:)`.
    package static func requested(_ text: some StringProtocol, within limit: Duration) -> Duration? {
        guard text.utf8.allSatisfy({ (0x30...0x39).contains($0) || Self.decimalMarks.contains($0) }),
            let seconds = Double(text), seconds > 0, seconds.isFinite
        else { return nil }
        guard seconds < limit.inSeconds else { return limit }
        return .milliseconds(Swift.max(1, Int64((seconds * 1000).rounded())))
    }

    /// The bytes of a decimal number besides its digits: `.`, `e`, `E`, `+`, `-`.
    private static let decimalMarks: [UInt8] = [0x2E, 0x65, 0x45, 0x2B, 0x2D]

    /// Why a requested deadline (`requested(_:within:)` gave nil) is refused: one wording for the service and the
    /// worker.
    package static func refusal(ofDeadline text: some StringProtocol) -> String {
        "deadline: expected a positive decimal number of seconds, got '\(text)'"
    }
}

extension ContinuousClock.Instant {
    /// This deadline, or `Duration.furthestDeadline` from now when that comes first.
    package var withinFurthest: ContinuousClock.Instant {
        let furthest = ContinuousClock.now + .furthestDeadline
        return self < furthest ? self : furthest
    }
}
