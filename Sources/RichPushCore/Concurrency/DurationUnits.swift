/// The conversions of `Duration` the engine, the service and the worker share.
extension Duration {
    /// The duration in seconds, fractions included.
    package var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// The duration in whole milliseconds (truncated).
    package var inMilliseconds: Int {
        Int(components.seconds) * 1000 + Int(components.attoseconds / 1_000_000_000_000_000)
    }

    /// `seconds` (positive and finite, checked by the caller) as a duration to the millisecond, never longer than
    /// `limit` and never zero: a deadline a request or a queue entry asks for, within the configured one.
    package static func seconds(_ seconds: Double, within limit: Duration) -> Duration {
        guard seconds < limit.inSeconds else { return limit }
        return .milliseconds(Swift.max(1, Int64((seconds * 1000).rounded())))
    }
}
