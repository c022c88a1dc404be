import RichPushCore

/// What an engine has done, counted since it was made: for operators (the service's `/metrics`).
public struct EngineStatistics: Sendable, Hashable {
    /// Media cache lookups answered from the cache (or from a fetch in flight for another payload).
    public var cacheHits = 0
    /// Lookups that fetched the URL (not cached, or cached and the origin sent new bytes on revalidation).
    public var cacheMisses = 0
    /// Lookups of a stale entry that the origin confirmed unchanged (304 Not Modified).
    public var cacheRevalidations = 0
    /// Bytes of media fetched and stored (not counting bytes linked from the cache).
    public var fetchedBytes = 0
    /// What the publisher did (`MediaPublisher.statistics`), when it counts: uploads, hits, failures by code.
    public var publishing: PublishStatistics? = nil

    /// No counts yet.
    public init() {}
}

/// The engine's counters, updated from any task.
package final class StatisticsCounter: Sendable {
    private let counts = LockedValue(EngineStatistics())

    package init() {}

    package func record(_ update: (inout EngineStatistics) -> Void) { counts.withLock(update) }

    package var snapshot: EngineStatistics { counts.withLock { $0 } }
}
