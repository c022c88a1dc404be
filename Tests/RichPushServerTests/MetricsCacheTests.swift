import RichPushHTTP
import Synchronization
import Testing

@testable import RichPushServer

/// `/metrics`' renderings shared by the scrapes, driven with instants given.
@Suite struct MetricsCacheTests {
    /// A rendering counted, costing at least `cost` of the thread's CPU time (spent spinning: the cache measures
    /// that, so a rendering preempted on a loaded machine still costs it), and first waiting, spinning too (within
    /// 10 s), until `waiters` scrapes wait for it.
    final class Renderings: Sendable {
        let count = Atomic<Int>(0)
        let cost: Duration
        let waiters: Int
        let cache: MetricsCache
        /// Whether every rendering saw its waiters come.
        let waitersCame = Atomic<Bool>(true)

        init(cost: Duration = .zero, waiters: Int = 0, cache: MetricsCache) {
            (self.cost, self.waiters, self.cache) = (cost, waiters, cache)
        }

        func render() -> [UInt8] {
            let made = count.add(1, ordering: .relaxed).newValue
            let clock = ContinuousClock()
            let start = clock.now
            let spent = MetricsCache.threadTime()
            while MetricsCache.threadTime() - spent < cost || (made == 1 && cache.waitingCount < waiters) {
                if clock.now - start > .seconds(10) {
                    waitersCame.store(false, ordering: .relaxed)
                    break
                }
            }
            return Array("rendering \(made)\n".utf8)
        }
    }

    static func text(_ response: HTTPResponse) -> String {
        guard case .bytes(let bytes) = response.body else { return "" }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test(
        """
        scrapes at once share one rendering costing a millisecond or more: those that come while it is made wait for \
        it
        """)
    func oneRenderingShared() async {
        let cache = MetricsCache()
        let renderings = Renderings(cost: .milliseconds(3), waiters: 49, cache: cache)
        let asked = ContinuousClock.now
        let shared = await withTaskGroup(of: ObjectIdentifier?.self) { group in
            for _ in 0..<50 {
                group.addTask { await cache.response(now: asked, render: renderings.render).preparedIdentity }
            }
            return await group.reduce(into: [ObjectIdentifier?]()) { $0.append($1) }
        }
        let came = renderings.waitersCame.load(ordering: .relaxed)
        #expect(came, "49 scrapes waited for the first rendering")
        let made = renderings.count.load(ordering: .relaxed)
        #expect(made == 1)
        // One libmicrohttpd response for all, the text in it alone.
        #expect(Set(shared).count == 1 && shared.first! != nil)
        #expect(cache.waitingCount == 0)
    }

    @Test(
        """
        a rendering costing a millisecond or more is served for twenty times its cost (10 s at most), then made \
        again; a cheaper one is made for each scrape
        """)
    func freshness() async {
        let cache = MetricsCache()
        let costly = Renderings(cost: .milliseconds(3), cache: cache)
        let before = ContinuousClock.now
        let first = await cache.response(now: before, render: costly.render)
        #expect(first.status == 200)
        #expect(first.headers.contains { $0 == ("Content-Type", "text/plain; version=0.0.4") })
        #expect(first.preparedIdentity != nil)
        #expect(Self.text(first).isEmpty, "the text is libmicrohttpd's copy alone")
        #expect(await cache.response(now: before, render: costly.render).preparedIdentity == first.preparedIdentity)
        // Past the longest freshness: made again.
        let later = ContinuousClock.now + .seconds(11)
        #expect(await cache.response(now: later, render: costly.render).preparedIdentity != first.preparedIdentity)
        #expect(costly.count.load(ordering: .relaxed) == 2)

        let small = MetricsCache()
        let cheap = Renderings(cache: small)
        for made in 1...3 {
            #expect(Self.text(await small.response(now: before, render: cheap.render)) == "rendering \(made)\n")
        }
        #expect(MetricsCache.freshness(cost: .milliseconds(310)) == .milliseconds(6200))
        #expect(MetricsCache.freshness(cost: .seconds(2)) == .seconds(10))
        #expect(MetricsCache.freshness(cost: .microseconds(900)) == .zero)
    }
}
