import RichPushCore

/// The media cache's bookkeeping, apart from its files: each URL's entry or the fetch in flight for it and who
/// waits for that fetch (single flight), the time to live, and least-recently-used eviction by count and bytes.
/// It takes the time as a value and returns what to do (use an entry, lead a fetch, wait; the files to unlink, the
/// waiters to tell), so that it is tested without I/O or a clock; `MediaCache` is the driver that keeps it under a
/// lock and does the links and fetches. `Waiter` is what a waiter is told through (a continuation, in the driver).
struct CacheState<Waiter> {
    /// What a payload asking for a URL does.
    enum Plan: Equatable {
        /// Attach this fresh entry (its last use is now).
        case use(CacheEntry)
        /// Fetch the URL for everyone: conditionally with the stale entry's validators when there is one.
        case lead(stale: CacheEntry?)
        /// Wait for the fetch in flight.
        case wait
    }

    private enum Slot {
        case ready(CacheEntry)
        case inFlight(waiters: [UInt64: Waiter], stale: CacheEntry?)
    }

    let settings: CacheSettings
    /// By URL, byte for byte (`ExactString`).
    private var slots: [ExactString: Slot] = [:]
    /// The bytes and number of the ready entries.
    private(set) var bytes = 0
    private(set) var entries = 0
    private var lastWaiter: UInt64 = 0

    init(settings: CacheSettings) {
        self.settings = settings
    }

    /// What a payload asking for `url` at `now` does: use a fresh entry, wait for the fetch in flight, or lead
    /// one (the URL is then in flight, with its stale entry kept until the fetch settles).
    mutating func plan(_ url: String, now: ContinuousClock.Instant) -> Plan {
        let key = ExactString(url)
        switch slots[key] {
        case .ready(var entry)?:
            if now - entry.fetchedAt < settings.timeToLive {
                entry.lastUsed = now
                slots[key] = .ready(entry)
                return .use(entry)
            }
            slots[key] = .inFlight(waiters: [:], stale: entry)
            return .lead(stale: entry)
        case .inFlight?:
            return .wait
        case nil:
            slots[key] = .inFlight(waiters: [:], stale: nil)
            return .lead(stale: nil)
        }
    }

    /// A new waiter's identity, for `addWaiter` and `removeWaiter`.
    mutating func nextWaiterID() -> UInt64 {
        lastWaiter += 1
        return lastWaiter
    }

    /// Adds `waiter` to the fetch in flight for `url`; false when there is none (it settled first).
    mutating func addWaiter(_ waiter: Waiter, id: UInt64, for url: String) -> Bool {
        let key = ExactString(url)
        guard case .inFlight(var waiters, let stale)? = slots[key] else { return false }
        waiters[id] = waiter
        slots[key] = .inFlight(waiters: waiters, stale: stale)
        return true
    }

    /// Takes the waiter `id` off the fetch in flight for `url` (it gave up); nil when it was told already.
    mutating func removeWaiter(id: UInt64, for url: String) -> Waiter? {
        let key = ExactString(url)
        guard case .inFlight(var waiters, let stale)? = slots[key], let waiter = waiters.removeValue(forKey: id) else {
            return nil
        }
        slots[key] = .inFlight(waiters: waiters, stale: stale)
        return waiter
    }

    /// Whether payloads wait for the fetch in flight for `url` (the URL is wanted a second time).
    func hasWaiters(_ url: String) -> Bool {
        if case .inFlight(let waiters, _)? = slots[ExactString(url)] { return !waiters.isEmpty }
        return false
    }

    /// What settling a fetch leaves to do.
    struct Settled {
        /// The cache's links to unlink: the stale entry's (unless revalidated in place) and the evicted ones'.
        var unlink: [String]
        /// Who waited for the fetch, to be told its result.
        var waiters: [Waiter]
    }

    /// Ends the fetch in flight for `url`: `entry` is cached (nil: nothing is), replacing `stale`, the entry the
    /// fetch began with; least recently used entries go when a bound is passed. Nothing happens when `url` is not in
    /// flight (`removeAll` dropped it).
    mutating func settle(_ url: String, entry: CacheEntry?, replacing stale: CacheEntry?) -> Settled {
        let key = ExactString(url)
        guard case .inFlight(let waiters, _)? = slots[key] else { return Settled(unlink: [], waiters: []) }
        var unlink: [String] = []
        if let stale {
            bytes -= stale.media.bytes
            entries -= 1
            // Revalidated in place (the same file) is counted again below; a replaced link goes.
            if entry?.media.path != stale.media.path, let link = stale.link { unlink.append(link) }
        }
        slots[key] = entry.map { .ready($0) }
        if let entry {
            bytes += entry.media.bytes
            entries += 1
            unlink += evict(keeping: url)
        }
        return Settled(unlink: unlink, waiters: Array(waiters.values))
    }

    /// When a bound is passed, drops least recently used entries (never `keeping`) down to 90% of the bounds in
    /// one sorted pass; returns their links to unlink. Evicting a tenth at a time keeps a full cache from
    /// scanning every entry on every insertion (a day of unique URLs would otherwise pay O(entries) each).
    private mutating func evict(keeping: String) -> [String] {
        guard entries > settings.maximumEntries || bytes > settings.maximumBytes else { return [] }
        let entryTarget = settings.maximumEntries - settings.maximumEntries / 10
        let byteTarget = settings.maximumBytes - settings.maximumBytes / 10
        let kept = ExactString(keeping)
        let candidates = slots.compactMap { key, slot -> (ExactString, CacheEntry)? in
            if case .ready(let entry) = slot, key != kept { return (key, entry) }
            return nil
        }.sorted { $0.1.lastUsed < $1.1.lastUsed }
        var removed: [String] = []
        for (key, entry) in candidates {
            guard entries > entryTarget || bytes > byteTarget else { break }
            slots[key] = nil
            entries -= 1
            bytes -= entry.media.bytes
            if let link = entry.link { removed.append(link) }
        }
        return removed
    }

    /// Drops the ready entry of `url` (its file is gone); returns its link to unlink, if it had one.
    mutating func forget(_ url: String) -> String? {
        let key = ExactString(url)
        guard case .ready(let entry)? = slots[key] else { return nil }
        slots[key] = nil
        entries -= 1
        bytes -= entry.media.bytes
        return entry.link
    }

    /// Records the cache's own link `media` for the entry of `url` that pointed at the first payload's file
    /// `firstPath`; false when the entry changed meanwhile (or another payload linked it first).
    mutating func recordLink(_ media: FetchedMedia, for url: String, replacing firstPath: String) -> Bool {
        let key = ExactString(url)
        guard case .ready(var current)? = slots[key], current.media.path == firstPath else { return false }
        current.media = media
        current.linked = true
        slots[key] = .ready(current)
        return true
    }

    /// The ready entry of `url`, if any.
    func entry(_ url: String) -> CacheEntry? {
        if case .ready(let entry)? = slots[ExactString(url)] { return entry }
        return nil
    }

    /// Forgets every ready entry (the cache directory is going); the fetches in flight go on.
    mutating func removeAll() {
        slots = slots.filter { if case .inFlight = $0.value { return true } else { return false } }
        entries = 0
        bytes = 0
    }
}
