/// The media cache shared by the payloads of one engine.
public struct CacheSettings: Sendable {
    /// Whether URLs are fetched once for many payloads. Default true.
    public var enabled = true
    /// How long a fetched URL is used without asking the origin again; after that it is revalidated
    /// (If-None-Match / If-Modified-Since). Default 300 s: a campaign sends the same image for minutes, and a
    /// changed image reaches new payloads within five minutes.
    public var timeToLive: Duration = .seconds(300)
    /// The most URLs kept. Default 10,000: a campaign has a handful of images; a day of unique images
    /// should not grow the index without bound.
    public var maximumEntries = 10_000
    /// The most bytes kept (the cache's own hard links). Default 1 GB: 100 campaign images at the 10 MB
    /// cap; least recently used out first.
    public var maximumBytes = 1_000_000_000

    /// The documented defaults.
    public init() {}
}
