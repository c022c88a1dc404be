#if canImport(Glibc)
    import Glibc
#endif

/// Whether, and when, a failed fetch is made again before its deadline. It sits above the transfer: it judges a
/// settled fetch's failure alone (its transport cause, HTTP status and Retry-After), and the fetch loop knows
/// nothing of it.
///
/// Retried while the deadline leaves room: a refused or dropped (reset, or closed with no response) connection,
/// a connect timeout, HTTP 502, 503, 504 and 429. A Retry-After (seconds or an HTTP date) is honoured when it
/// fits in the time left, else the failure is reported at once. Never retried: any other status, refusals by
/// policy (scheme, address, port, URL), type and size refusals, a slow body, the deadline, cancellation.
public struct RetryPolicy: Sendable, Hashable {
    /// The most fetches made after the first, for one reference (`--retries`). Default 2: a brief 503, a reset
    /// or a restarting origin is over within a second or two, which two retries with backoff (about 0.2 s and
    /// 0.4 s) cover well within the 25 s deadline; more would hammer an origin that is down, once per payload of
    /// a campaign.
    public var retries: Int = 2
    /// The backoff before the first retry; it doubles for each later one. Default 250 ms: long enough for a
    /// listener to come back or a load balancer to pick another backend, short beside the deadline.
    public var initialBackoff: Duration = .milliseconds(250)
    /// The longest backoff. Default 4 s: a sixth of the default deadline.
    public var maximumBackoff: Duration = .seconds(4)
    /// The least time that must be left before the deadline when a retry starts. Default 500 ms: an attempt that
    /// starts with less would most likely end as `expired`, and hide the real failure behind it.
    public var minimumTimeLeft: Duration = .milliseconds(500)
    /// The seed of the backoff's jitter; nil (the default) draws from the system's generator. With a seed, the
    /// jitter of a URL's nth retry is the same on every run (tests).
    public var jitterSeed: UInt64? = nil

    /// The documented defaults.
    public init() {}

    /// What to do after a failed attempt.
    public enum Decision: Sendable, Hashable {
        /// Fetch again after waiting this long.
        case retry(after: Duration)
        /// Report the failure.
        case stop
    }

    /// The statuses worth another attempt: 429 Too Many Requests, and a gateway or server briefly unwell.
    static let transientStatuses: Set<Int> = [429, 502, 503, 504]

    /// The decision once attempt number `attempt` (1 for the first) of `url` failed with `failure`.
    /// - Parameters:
    ///   - now: the moment of the decision; `deadline`: when the reference must be settled.
    ///   - wallClock: seconds since 1970 (UTC), to read a Retry-After given as a date.
    public func decision(
        after failure: FetchFailure, attempt: Int, url: String, now: ContinuousClock.Instant,
        deadline: ContinuousClock.Instant, wallClock: Int64 = RetryPolicy.secondsSinceEpoch()
    ) -> Decision {
        guard attempt <= retries, let cause = failure.cause else { return .stop }
        let wait: Duration
        switch cause {
        case .connectionRefused, .connectionDropped, .connectTimeout:
            wait = backoff(attempt: attempt, url: url)
        case .status(let status, let retryAfter):
            guard Self.transientStatuses.contains(status) else { return .stop }
            // The server's own figure wins over ours when it gives one we can read.
            wait =
                retryAfter.flatMap { Self.delay(retryAfter: $0, wallClock: wallClock) }
                ?? backoff(attempt: attempt, url: url)
        }
        guard now + wait + minimumTimeLeft <= deadline else { return .stop }
        return .retry(after: wait)
    }

    /// The backoff before retry number `attempt`: `initialBackoff` doubled per earlier retry, at most
    /// `maximumBackoff`, of which half is fixed and half random ("equal jitter"), so that payloads that failed
    /// together do not all come back at the same moment, and none comes back at once.
    public func backoff(attempt: Int, url: String) -> Duration {
        var base = min(initialBackoff, maximumBackoff)
        for _ in 1..<max(attempt, 1) where base < maximumBackoff { base = min(base * 2, maximumBackoff) }
        return base / 2 + (base / 2) * jitter(attempt: attempt, url: url)
    }

    /// A number in 0..<1: from the seed, the URL and the attempt when seeded, else from the system.
    private func jitter(attempt: Int, url: String) -> Double {
        guard let jitterSeed else { return Double.random(in: 0..<1) }
        // FNV-1a of the URL: stable across runs, unlike Hasher.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in url.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        var state = jitterSeed ^ hash ^ UInt64(truncatingIfNeeded: attempt)
        // One SplitMix64 step.
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Double((z ^ (z >> 31)) >> 11) * 0x1p-53
    }

    /// Runs `fetch` until it succeeds or the policy stops, calling `attempting` with each attempt's number as it
    /// starts, and `retrying` with each failure that will be tried again (the failure, the number of the attempt
    /// that failed, the wait before the next). Returns the last outcome and the number of attempts. A wait cut short
    /// by cancellation ends it as `cancelled`.
    public func run(
        url: String, deadline: ContinuousClock.Instant, attempting: (Int) -> Void = { _ in },
        retrying: (FetchFailure, Int, Duration) -> Void = { _, _, _ in },
        _ fetch: () async -> Result<FetchedMedia, FetchFailure>
    ) async -> (result: Result<FetchedMedia, FetchFailure>, attempts: Int) {
        await run(
            url: url, deadline: deadline, attempting: attempting, retrying: retrying,
            sleep: { try await Task.sleep(for: $0) }, fetch)
    }

    /// `run(url:deadline:attempting:retrying:_:)` waiting with `sleep`, whose throwing ends the run as `cancelled`
    /// (the engine's waits, which its drain's deadline cuts).
    func run(
        url: String, deadline: ContinuousClock.Instant, attempting: (Int) -> Void = { _ in },
        retrying: (FetchFailure, Int, Duration) -> Void = { _, _, _ in },
        sleep: (Duration) async throws -> Void, _ fetch: () async -> Result<FetchedMedia, FetchFailure>
    ) async -> (result: Result<FetchedMedia, FetchFailure>, attempts: Int) {
        var attempt = 1
        while true {
            attempting(attempt)
            let result = await fetch()
            guard case .failure(let failure) = result,
                case .retry(let wait) = decision(
                    after: failure, attempt: attempt, url: url, now: .now, deadline: deadline)
            else { return (result, attempt) }
            retrying(failure, attempt, wait)
            do {
                try await sleep(wait)
            } catch {
                return (
                    .failure(FetchFailure(.cancelled, "cancelled while waiting to retry (\(failure.detail))")), attempt
                )
            }
            attempt += 1
        }
    }

    // MARK: - Retry-After

    /// How long a Retry-After value asks to wait: delta-seconds, or an HTTP date (IMF-fixdate, `Sun, 06 Nov
    /// 1994 08:49:37 GMT`) against `wallClock`. Nil for a value that is neither (the backoff applies then).
    static func delay(retryAfter value: String, wallClock: Int64) -> Duration? {
        let digits = value.utf8.allSatisfy { (0x30...0x39).contains($0) }
        if digits, !value.isEmpty {
            // Longer than Int64 is "not within any deadline": a year stands for it.
            return .seconds(min(Int64(value) ?? .max, 31_536_000))
        }
        guard let date = httpDate(value) else { return nil }
        return .seconds(max(0, date - wallClock))
    }

    /// Seconds since 1970 of an IMF-fixdate (RFC 9110 5.6.7), or nil.
    static func httpDate(_ text: String) -> Int64? {
        let parts = text.split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT", let day = Int64(parts[1]),
            let month = months.firstIndex(of: String(parts[2])), let year = Int64(parts[3]), (1...31).contains(day)
        else { return nil }
        let time = parts[4].split(separator: ":").compactMap { Int64($0) }
        guard time.count == 3, (0...23).contains(time[0]), (0...59).contains(time[1]), (0...60).contains(time[2]) else {
            return nil
        }
        // Days from the civil date (Howard Hinnant's algorithm), March-based years.
        let m = Int64(month + 1)
        let y = m <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return days * 86_400 + time[0] * 3600 + time[1] * 60 + time[2]
    }

    /// The wall clock, in whole seconds since 1970 (CLOCK_REALTIME).
    public static func secondsSinceEpoch() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec)
    }
}
