import RichPushCore
import Testing

@testable import RichPushMedia

@Suite("Cache state: single flight, time to live and eviction, without files or a clock")
struct CacheStateTests {
    /// Waiters are told through names here; the driver uses continuations.
    typealias State = CacheState<String>

    static let start = ContinuousClock.now

    static func settings(ttl: Duration = .seconds(300), entries: Int = 100, bytes: Int = 1_000_000) -> CacheSettings {
        var settings = CacheSettings()
        settings.timeToLive = ttl
        settings.maximumEntries = entries
        settings.maximumBytes = bytes
        return settings
    }

    /// An entry of `bytes` at `path`, fetched and last used `at` seconds after `start`.
    static func entry(_ path: String, bytes: Int = 10, linked: Bool = true, at seconds: Int = 0) -> CacheEntry {
        let time = start + .seconds(seconds)
        return CacheEntry(
            media: FetchedMedia(path: path, directory: "/d", type: .jpeg, bytes: bytes, sha256: "s"),
            linked: linked, fetchedAt: time, lastUsed: time)
    }

    /// `state` with `url` fetched into `entry` (led and settled with no waiter).
    static func cached(_ url: String, _ entry: CacheEntry, in state: inout State) -> State.Settled {
        _ = state.plan(url, now: entry.fetchedAt)
        return state.settle(url, entry: entry, replacing: nil)
    }

    @Test("the first asker leads, later ones wait and are all told when it settles; then the entry is used")
    func singleFlight() {
        var state = State(settings: Self.settings())
        #expect(state.plan("u", now: Self.start) == .lead(stale: nil))
        #expect(!state.hasWaiters("u"))
        for name in ["a", "b"] {
            #expect(state.plan("u", now: Self.start) == .wait)
            #expect(state.addWaiter(name, id: state.nextWaiterID(), for: "u") == true)
        }
        #expect(state.hasWaiters("u"))
        let entry = Self.entry("/c/1.jpg", bytes: 40)
        let settled = state.settle("u", entry: entry, replacing: nil)
        #expect(settled.waiters.sorted() == ["a", "b"])
        #expect(settled.unlink.isEmpty)
        #expect(state.entries == 1 && state.bytes == 40)
        // A waiter that comes after the settling finds nothing in flight and asks again.
        #expect(state.addWaiter("late", id: state.nextWaiterID(), for: "u") == false)
        var used = entry
        used.lastUsed = Self.start + .seconds(5)
        #expect(state.plan("u", now: Self.start + .seconds(5)) == .use(used))
        #expect(state.entry("u")?.lastUsed == Self.start + .seconds(5))
    }

    @Test("a waiter that gives up is not told; a failed fetch caches nothing and tells the rest")
    func withdrawnWaiter() {
        var state = State(settings: Self.settings())
        _ = state.plan("u", now: Self.start)
        let gone = state.nextWaiterID()
        #expect(state.addWaiter("gone", id: gone, for: "u") == true)
        #expect(state.addWaiter("stays", id: state.nextWaiterID(), for: "u") == true)
        #expect(state.removeWaiter(id: gone, for: "u") == "gone")
        #expect(state.removeWaiter(id: gone, for: "u") == nil)
        let settled = state.settle("u", entry: nil, replacing: nil)
        #expect(settled.waiters == ["stays"])
        #expect(state.entries == 0 && state.entry("u") == nil)
        #expect(state.plan("u", now: Self.start) == .lead(stale: nil))
    }

    @Test("past its time to live an entry is fetched again; the replaced link goes, one revalidated in place stays")
    func staleness() {
        var state = State(settings: Self.settings(ttl: .seconds(60)))
        let old = Self.entry("/c/old.jpg", bytes: 30)
        _ = Self.cached("u", old, in: &state)
        var used = old
        used.lastUsed = Self.start + .seconds(59)
        #expect(state.plan("u", now: Self.start + .seconds(59)) == .use(used))
        #expect(state.plan("u", now: Self.start + .seconds(60)) == .lead(stale: used))
        #expect(state.plan("u", now: Self.start + .seconds(60)) == .wait)
        // Fetched again into a new file: the old link goes, the counts are the new entry's alone.
        let fresh = Self.entry("/c/new.jpg", bytes: 50, at: 60)
        #expect(state.settle("u", entry: fresh, replacing: used).unlink == ["/c/old.jpg"])
        #expect(state.entries == 1 && state.bytes == 50)
        // Revalidated in place (304): the same file, kept, counted once.
        #expect(state.plan("u", now: Self.start + .seconds(200)) == .lead(stale: fresh))
        var revalidated = fresh
        revalidated.fetchedAt = Self.start + .seconds(200)
        #expect(state.settle("u", entry: revalidated, replacing: fresh).unlink.isEmpty)
        #expect(state.entries == 1 && state.bytes == 50)
    }

    @Test("over a bound, least recently used entries go down to 90%, never the one just cached nor one in flight")
    func eviction() {
        var state = State(settings: Self.settings(entries: 10))
        for index in 0..<10 { _ = Self.cached("u\(index)", Self.entry("/c/\(index).jpg", at: index), in: &state) }
        // u0 used last of all: it stays; u1 and u2 are now the least recently used.
        _ = state.plan("u0", now: Self.start + .seconds(100))
        _ = state.plan("flight", now: Self.start + .seconds(101))
        let settled = Self.cached("u10", Self.entry("/c/10.jpg", at: 1), in: &state)
        #expect(settled.unlink.sorted() == ["/c/1.jpg", "/c/2.jpg"])
        #expect(state.entries == 9)
        #expect(state.entry("u0") != nil && state.entry("u10") != nil && state.entry("u1") == nil)
        #expect(state.plan("flight", now: Self.start + .seconds(102)) == .wait)
    }

    @Test("the byte bound evicts too; an entry without a link of its own leaves nothing to unlink")
    func byteBound() {
        var state = State(settings: Self.settings(bytes: 1_000))
        _ = Self.cached("first", Self.entry("/a/first.jpg", bytes: 600, linked: false, at: 0), in: &state)
        let settled = Self.cached("second", Self.entry("/c/second.jpg", bytes: 600, at: 1), in: &state)
        #expect(settled.unlink.isEmpty)
        #expect(state.entry("first") == nil)
        #expect(state.bytes == 600 && state.entries == 1)
    }

    @Test("a second payload's link is recorded once, on the entry it was made from")
    func recordLink() {
        var state = State(settings: Self.settings())
        let first = Self.entry("/a/first.jpg", linked: false)
        _ = Self.cached("u", first, in: &state)
        var linked = first.media
        linked.path = "/c/link.jpg"
        #expect(state.recordLink(linked, for: "u", replacing: "/a/first.jpg") == true)
        #expect(state.entry("u")?.link == "/c/link.jpg")
        #expect(state.recordLink(linked, for: "u", replacing: "/a/first.jpg") == false)
        #expect(state.forget("u") == "/c/link.jpg")
        #expect(state.entries == 0 && state.bytes == 0)
    }

    @Test("removing all keeps the fetches in flight")
    func removeAll() {
        var state = State(settings: Self.settings())
        _ = Self.cached("ready", Self.entry("/c/r.jpg"), in: &state)
        _ = state.plan("flight", now: Self.start)
        #expect(state.addWaiter("w", id: state.nextWaiterID(), for: "flight") == true)
        state.removeAll()
        #expect(state.entries == 0 && state.bytes == 0 && state.entry("ready") == nil)
        #expect(state.settle("flight", entry: Self.entry("/c/f.jpg"), replacing: nil).waiters == ["w"])
    }
}
