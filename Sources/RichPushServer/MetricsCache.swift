import RichPush
import RichPushHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// `GET /metrics`' answer for `serve`: rendered off the server's thread; once a rendering costs a millisecond or more,
/// at most once while the last rendering is fresh, and shared by every scrape meanwhile (one libmicrohttpd response
/// queued on each connection, one copy of the text), a scrape that comes while one renders waiting for it. Cheaper
/// renderings are made for each scrape, so that a scrape after a payload counts it.
///
/// Why: under `--tenants` every active tenant adds its series (about 4 KB: its duration histogram's buckets), so
/// the text grows with the tenants (19 MB for 5,000), and it was rendered on the server's thread for each scrape,
/// which answers no other request meanwhile, each connection holding its own copy. `/metrics` needs no token: 32
/// clients scraping in a loop at 5,000 tenants held `GET /healthz` for 4.3 s (median) and payloads for 12.6 s, and
/// 100 connections sending the request and never reading took the process from 101 to 587 MiB.
final class MetricsCache: Sendable {
    private struct State {
        /// The last rendering, when its rendering began, and what it cost.
        var latest: (response: HTTPResponse, made: ContinuousClock.Instant, cost: Duration)? = nil
        /// The scrapes waiting for a rendering under way; nil when none is.
        var waiting: [CheckedContinuation<HTTPResponse, Never>]? = nil
    }

    private let state = LockedValue(State())

    /// How long a rendering is served, as a multiple of the CPU time it cost: 20, so that renderings take at most a
    /// twentieth of a thread however often clients ask (0.31 s for the 19 MB of 5,000 active tenants: served 6.2
    /// s, Prometheus scraping every 10 to 60 s), up to `longest`. The copies that connections not reading hold are
    /// bounded the same way: one a freshness.
    static let ageOverCost = 20
    /// The longest a rendering is served: 10 s (a rendering costing more than 0.5 s then takes more than a
    /// twentieth of a thread under a flood of scrapes; past a scrape interval the text would be older than it).
    static let longest: Duration = .seconds(10)
    /// What a rendering costs before it is shared: a millisecond (a server without tenants renders in tens of
    /// microseconds: rendered for each scrape, read after write).
    static let sharedFrom: Duration = .milliseconds(1)

    /// How long a rendering that cost `cost` of CPU time is served; zero (not shared) under `sharedFrom`.
    static func freshness(cost: Duration) -> Duration {
        cost < sharedFrom ? .zero : min(longest, cost * ageOverCost)
    }

    /// The CPU time the calling thread has used: a rendering preempted on a loaded machine costs no more for it.
    static func threadTime() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }

    /// The scrapes waiting for a rendering under way (tests).
    var waitingCount: Int { state.withLock { $0.waiting?.count ?? 0 } }

    /// The answer to a scrape at `now`: the last rendering while fresh, the one under way when one is, else a new
    /// one of `render`'s text.
    func response(now: ContinuousClock.Instant = .now, render: () -> [UInt8]) async -> HTTPResponse {
        enum Step {
            case serve(HTTPResponse)
            case wait
            case render
            case renderAlone
        }
        let step = state.withLock { state -> Step in
            if let latest = state.latest {
                let freshness = Self.freshness(cost: latest.cost)
                if freshness == .zero { return .renderAlone }
                if now - latest.made < freshness { return .serve(latest.response) }
            }
            if state.waiting != nil { return .wait }
            state.waiting = []
            return .render
        }
        switch step {
        case .serve(let response):
            return response
        case .wait:
            return await withCheckedContinuation { continuation in
                // The rendering may have ended since the step was decided: its answer then, at once.
                let done = state.withLock { state -> HTTPResponse? in
                    guard state.waiting != nil else { return state.latest?.response }
                    state.waiting?.append(continuation)
                    return nil
                }
                if let done { continuation.resume(returning: done) }
            }
        case .render, .renderAlone:
            let began = ContinuousClock.now
            let started = Self.threadTime()
            let text = render()
            let cost = Self.threadTime() - started
            // Made once for libmicrohttpd, and kept there alone (one copy of the text), only when it may be shared.
            let response =
                Self.freshness(cost: cost) == .zero
                ? HealthRoutes.metrics(text) : HealthRoutes.metrics(text).preparedAlone()
            let waiting = state.withLock { state -> [CheckedContinuation<HTTPResponse, Never>] in
                state.latest = (response, began, cost)
                guard case .render = step else { return [] }
                defer { state.waiting = nil }
                return state.waiting ?? []
            }
            for continuation in waiting { continuation.resume(returning: response) }
            return response
        }
    }
}
