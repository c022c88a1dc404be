/// The engine: finds every media reference in a payload, fetches each under the payload's deadline, and
/// returns the mutated content with its attachments, or the best attempt so far when the deadline comes.
///
/// One `Enricher` serves many payloads at once through one fetch loop. Call `await shutdown()` when done.
public final class Enricher: Sendable {
    /// The configuration it was made with.
    public let configuration: Configuration
    private let fetcher: Fetcher
    private let cache: MediaCache?

    /// An enricher with this configuration.
    /// - Throws: `FetcherError` when libmagic's database cannot be loaded or the attachments root is refused.
    public init(configuration: Configuration = Configuration()) throws(FetcherError) {
        self.configuration = configuration
        let fetcher = try Fetcher(configuration: configuration)
        self.fetcher = fetcher
        self.cache =
            configuration.cache.enabled
            ? MediaCache(fetcher: fetcher, settings: configuration.cache) : nil
    }

    /// Processes one payload, finishing by `deadline`.
    ///
    /// Returns when every reference has settled, or at the deadline with what finished (outcome `expired`;
    /// transfers still running are cancelled and their partial files removed first). Cancelling the calling
    /// task ends it the same way.
    public func enrich(_ payload: Payload, deadline: ContinuousClock.Instant) async -> EnrichmentResult {
        let run = EnrichmentRun(payload: payload, configuration: configuration)
        await process(run, deadline: deadline)
        return run.result()
    }

    /// Processes one payload within `timeout` from now (default: the configured deadline).
    public func enrich(_ payload: Payload, timeout: Duration? = nil) async -> EnrichmentResult {
        await enrich(payload, deadline: .now + (timeout ?? configuration.deadline))
    }

    /// Parses and processes one input; an input that is not a payload gives an `invalid` result.
    /// - Parameter source: the input's name, used as the problem's source when it is invalid.
    public func enrich(
        json bytes: some Collection<UInt8>, source: String, deadline: ContinuousClock.Instant
    ) async -> EnrichmentResult {
        let start = ContinuousClock.now
        do {
            let payload = try Payload(parsing: bytes, limits: configuration.limits.payload)
            return await enrich(payload, deadline: deadline)
        } catch {
            return .invalid(error, source: source, elapsed: .now - start)
        }
    }

    /// Fetches every reference of `run` concurrently, recording each outcome as it settles.
    func process(_ run: EnrichmentRun, deadline: ContinuousClock.Instant) async {
        await withTaskGroup(of: Void.self) { group in
            for (index, reference) in run.references.enumerated() {
                group.addTask {
                    let (result, _) = await self.configuration.retry.run(
                        url: reference.url, deadline: deadline, attempting: { run.attempting(index, $0) }
                    ) {
                        guard let cache = self.cache else {
                            return await self.fetcher.fetch(reference.url, deadline: deadline)
                        }
                        return await cache.attachment(for: reference.url, deadline: deadline)
                    }
                    run.record(index, result)
                }
            }
        }
    }

    /// What this engine has done so far: cache lookups and bytes fetched.
    public var statistics: EngineStatistics { fetcher.statistics.snapshot }

    /// Fetches only the headers and first bytes of `url` (see `Fetcher.probe`).
    func probe(_ url: String, deadline: ContinuousClock.Instant) async -> Result<FetchedMedia, FetchFailure> {
        await fetcher.probe(url, deadline: deadline)
    }

    /// Cancels whatever is in flight, stops the fetch loop and removes the media cache's links, returning once
    /// all of that is done (no thread of the cooperative pool is held meanwhile).
    public func shutdown() async {
        await fetcher.shutdown()
        cache?.removeAll()
    }

    /// `shutdown()` for synchronous code: blocks the calling thread until it is done. Not for async code, where
    /// it would hold a thread of the cooperative pool: there, `await shutdown()`.
    public func shutdown() {
        fetcher.shutdown()
        cache?.removeAll()
    }
}
