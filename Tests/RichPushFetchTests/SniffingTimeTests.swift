import Testing

@testable import RichPushFetch

@Suite("Sniffing time: what the loop's thread may spend deciding types at once, a turn")
struct SniffingTimeTests {
    /// A clock that moves only when a check says it took time.
    private final class TestClock {
        var now = ContinuousClock.now
    }

    /// Runs a check through `time` that takes `duration` on `clock` when it may decide at once; returns whether it
    /// might.
    private static func check(_ time: inout SniffingTime, _ clock: TestClock, taking duration: Duration) -> Bool {
        time.spend { atOnce in
            if atOnce { clock.now += duration }
            return atOnce
        }
    }

    @Test("checks run at once while some of the allowance is left; the one that uses it up is the last of the turn")
    func allowance() {
        let clock = TestClock()
        var time = SniffingTime(allowance: .milliseconds(5)) { clock.now }
        #expect(Self.check(&time, clock, taking: .milliseconds(3)))
        #expect(time.spent == .milliseconds(3))
        // 2 ms are left: this one starts, and runs past the allowance.
        #expect(Self.check(&time, clock, taking: .milliseconds(3)))
        #expect(time.spent == .milliseconds(6))
        #expect(!Self.check(&time, clock, taking: .milliseconds(3)))
        #expect(time.spent == .milliseconds(6), "a check not made at once is not charged")
    }

    @Test("a new turn has the whole allowance again")
    func newTurn() {
        let clock = TestClock()
        var time = SniffingTime(allowance: .milliseconds(1)) { clock.now }
        #expect(Self.check(&time, clock, taking: .milliseconds(2)))
        #expect(!Self.check(&time, clock, taking: .zero))
        time.newTurn()
        #expect(time.spent == .zero)
        #expect(Self.check(&time, clock, taking: .microseconds(10)))
        #expect(time.spent == .microseconds(10))
    }

    @Test("with no allowance nothing is decided at once")
    func none() {
        let clock = TestClock()
        var time = SniffingTime(allowance: .zero) { clock.now }
        #expect(!Self.check(&time, clock, taking: .milliseconds(1)))
        time.newTurn()
        #expect(!Self.check(&time, clock, taking: .milliseconds(1)))
        #expect(time.spent == .zero)
    }
}
