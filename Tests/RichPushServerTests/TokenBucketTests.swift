import Testing

@testable import RichPushServer

/// A tenant's `rate` as a token bucket, driven with instants given (no clock, no I/O).
@Suite struct TokenBucketTests {
    let start = ContinuousClock.now

    @Test("a full bucket lets `burst` requests through at once, then says how long until the next token")
    func burst() {
        var bucket = TokenBucket(TokenBucket.Rate(perSecond: 2, burst: 3), now: start)
        for _ in 1...3 { #expect(bucket.take(at: start) == nil) }
        let wait = bucket.take(at: start)
        #expect(wait == .milliseconds(500))
        // A refusal takes nothing: the same wait again.
        #expect(bucket.take(at: start) == .milliseconds(500))
    }

    @Test("a rate made in code far below the tenants file's least says a wait of a year at most, never traps")
    func tinyRate() {
        var bucket = TokenBucket(TokenBucket.Rate(perSecond: 1e-30, burst: 1), now: start)
        #expect(bucket.take(at: start) == nil)
        #expect(bucket.take(at: start) == .seconds(TokenBucket.longestWait))
    }

    @Test("tokens come back at the rate, never beyond the burst")
    func refill() {
        var bucket = TokenBucket(TokenBucket.Rate(perSecond: 10, burst: 2), now: start)
        #expect(bucket.take(at: start) == nil)
        #expect(bucket.take(at: start) == nil)
        #expect(bucket.take(at: start) != nil)
        #expect(bucket.take(at: start + .milliseconds(100)) == nil)
        #expect(bucket.take(at: start + .milliseconds(100)) != nil)
        // An hour idle fills it to its burst, no more.
        let later = start + .seconds(3600)
        #expect(bucket.take(at: later) == nil)
        #expect(bucket.take(at: later) == nil)
        #expect(bucket.take(at: later) != nil)
    }
}
