import RichPush
import RichPushHTTP

/// `GET /metrics`' answer for `serve`: rendered off the server's thread, at most once while the last rendering is
/// fresh, and shared by every scrape meanwhile (one libmicrohttpd response queued on each connection, one copy of the
/// text). A scrape that comes while one renders waits for that rendering.
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

    /// How long a rendering is served, as a multiple of what it cost: 20, so that renderings take at most a twentieth
    /// of a thread however often clients ask, and the text stays as fresh as that allows: a server without tenants
    /// renders in tens of microseconds (served for a millisecond or so), 5,000 active tenants' 19 MB took 0.31 s
    /// (served 6.2 s; Prometheus scrapes every 10 to 60 s). The copies that connections not reading hold are bounded
    /// the same way: one a freshness, whatever the number of connections.
    static let ageOverCost = 20

    /// How long a rendering that cost `cost` is served.
    static func freshness(cost: Duration) -> Duration { cost * ageOverCost }

    /// The answer to a scrape at `now`: the last rendering while fresh, the one under way when one is, else a new
    /// one of `render`'s text.
    func response(now: ContinuousClock.Instant = .now, render: () -> [UInt8]) async -> HTTPResponse {
        enum Step {
            case serve(HTTPResponse)
            case wait
            case render
        }
        let step = state.withLock { state -> Step in
            if let latest = state.latest, now - latest.made < Self.freshness(cost: latest.cost) {
                return .serve(latest.response)
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
        case .render:
            let began = ContinuousClock.now
            let response = HealthRoutes.metrics(render()).prepared()
            let cost = ContinuousClock.now - began
            let waiting = state.withLock { state -> [CheckedContinuation<HTTPResponse, Never>] in
                state.latest = (response, began, cost)
                defer { state.waiting = nil }
                return state.waiting ?? []
            }
            for continuation in waiting { continuation.resume(returning: response) }
            return response
        }
    }
}
