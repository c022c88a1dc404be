import RichPushCore

/// Where a media cache gets what it does not hold: a URL fetched by a deadline, conditionally when `validators` are
/// given. The engine gives the cache its `Fetcher`.
package protocol MediaSource: Sendable {
    /// Fetches `url` into a new attachment by `deadline`: `stored`, `notModified` (only when `validators` were
    /// given: the origin answered 304) or `failed`.
    func fetch(_ url: String, deadline: ContinuousClock.Instant, validators: Validators) async -> MediaFetchOutcome
}

extension MediaSource {
    /// `url` fetched without validators, by `deadline`: the stored media, or why there is none.
    package func unconditionalFetch(
        _ url: String, deadline: ContinuousClock.Instant
    ) async -> Result<FetchedMedia, FetchFailure> {
        switch await fetch(url, deadline: deadline, validators: Validators()) {
        case .stored(let media): return .success(media)
        case .failed(let failure): return .failure(failure)
        case .notModified: preconditionFailure("a fetch without validators is never revalidated")
        }
    }
}
