import RichPushCore

/// One URL's cached media: the file, whether it is the cache's own link, and when it was fetched and last used.
struct CacheEntry: Equatable, Sendable {
    var media: FetchedMedia
    /// Whether `media.path` is the cache's own link; else it is the first payload's file.
    var linked: Bool
    var fetchedAt: ContinuousClock.Instant
    var lastUsed: ContinuousClock.Instant

    /// The cache's link to the file, when it has one (what eviction unlinks).
    var link: String? { linked ? media.path : nil }
}
