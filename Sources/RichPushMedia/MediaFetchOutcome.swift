import RichPushCore

/// How a fetch through the whole pipeline (fetched, hashed, its structure walked, transformed) ended. Each success
/// says what it delivered; only a failure is a `FetchFailure`.
package enum MediaFetchOutcome: Sendable {
    /// The media, stored, hashed and ready to attach.
    case stored(FetchedMedia)
    /// A conditional request (with validators) was answered 304 Not Modified: the copy the validators came from
    /// stands.
    case notModified(Validators)
    /// Nothing was delivered, for this reason.
    case failed(FetchFailure)
}
