import RichPushCore

/// Where a media cache gets what it does not hold: a URL fetched by a deadline, conditionally when `validators` are
/// given (a 304 then ends it with code `not-modified`). The engine gives the cache its `Fetcher`.
package protocol MediaSource: Sendable {
    /// Fetches `url` into a new attachment by `deadline`; never throws (every way it ends is a `FetchFailure`).
    func fetch(
        _ url: String, deadline: ContinuousClock.Instant, validators: Validators
    ) async -> Result<FetchedMedia, FetchFailure>
}
