import RichPush
import Testing

/// The one clamp of a deadline a request (`?deadline=`) or a queue entry (`deadline`) asks for (no I/O).
@Suite struct RequestedDeadlineTests {
    @Test(
        """
        a positive, finite, decimal number of seconds, to the millisecond, never beyond the configured deadline nor \
        zero; anything else nil
        """,
        arguments: [
            ("2.5", Duration?.some(.milliseconds(2500))),
            ("30", .some(.seconds(25))),
            ("25", .some(.seconds(25))),
            ("1e300", .some(.seconds(25))),
            ("0.0001", .some(.milliseconds(1))),
            ("1E1", .some(.seconds(10))), ("+3", .some(.seconds(3))),
            ("0", nil), ("-1", nil), ("nan", nil), ("inf", nil), ("abc", nil), ("", nil), (" 2", nil),
            // Hexadecimal, which Double's parser takes: not a decimal number of seconds.
            ("0x10", nil), ("0x1p3", nil), ("0X8", nil),
        ])
    func clamp(text: String, expected: Duration?) {
        #expect(Duration.requested(text, within: .seconds(25)) == expected)
    }

    @Test(
        "a duration in milliseconds saturates at Int's bounds rather than trapping",
        arguments: [
            (Duration.seconds(Int64.max), Int.max), (.seconds(Int64.min), Int.min),
            (.seconds(9_223_372_036_854_775), 9_223_372_036_854_775_000), (.milliseconds(1500), 1500),
            (.milliseconds(-1500), -1500), (.zero, 0),
            // Within range by its seconds, past it with the fraction.
            (.seconds(9_223_372_036_854_775) + .milliseconds(999), Int.max),
        ])
    func milliseconds(duration: Duration, expected: Int) {
        #expect(duration.inMilliseconds == expected)
    }
}
