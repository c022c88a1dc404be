import RichPushHTTP
import Synchronization
import Testing

@testable import RichPushServer

/// `/metrics`' renderings shared by the scrapes, driven with instants given.
@Suite struct MetricsCacheTests {
    final class Renderings: Sendable {
        let count = Atomic<Int>(0)
        func render() -> [UInt8] {
            let made = count.add(1, ordering: .relaxed).newValue
            return Array("rendering \(made)\n".utf8)
        }
    }

    static func text(_ response: HTTPResponse) -> String {
        guard case .bytes(let bytes) = response.body else { return "" }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test("scrapes at once share one rendering: those that come while it is made wait for it or take it fresh")
    func oneRenderingShared() async {
        let cache = MetricsCache()
        let renderings = Renderings()
        // Every scrape asks at an instant before any rendering began: each finds one under way, or fresh.
        let asked = ContinuousClock.now
        let texts = await withTaskGroup(of: String.self) { group in
            for _ in 0..<50 {
                group.addTask { Self.text(await cache.response(now: asked, render: renderings.render)) }
            }
            return await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(renderings.count.load(ordering: .relaxed) == 1)
        #expect(Set(texts) == ["rendering 1\n"])
    }

    @Test("a rendering is served for twenty times what it cost, then made again")
    func freshness() async {
        let cache = MetricsCache()
        let renderings = Renderings()
        let before = ContinuousClock.now
        let first = await cache.response(now: before, render: renderings.render)
        #expect(Self.text(first) == "rendering 1\n")
        #expect(first.status == 200)
        #expect(first.headers.contains { $0 == ("Content-Type", "text/plain; version=0.0.4") })
        #expect(Self.text(await cache.response(now: before, render: renderings.render)) == "rendering 1\n")
        // Far past any rendering's freshness (a tiny one costs microseconds): made again.
        let later = ContinuousClock.now + .seconds(3600)
        #expect(Self.text(await cache.response(now: later, render: renderings.render)) == "rendering 2\n")
        #expect(MetricsCache.freshness(cost: .milliseconds(310)) == .milliseconds(6200))
    }
}
