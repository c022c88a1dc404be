import RichPushCore

/// How a transfer ended. Each success says what it delivered; only a failure is a `FetchFailure`, so that no
/// success travels as a failure code the rest of the engine must know to skip.
package enum TransferOutcome: Sendable {
    /// The body, stored and renamed to its type's extension, for the digest stage above to hash.
    case stored(StoredBody)
    /// The body, small enough to be held in memory (`BodyMemory`), for the task above to hash and store.
    case held(HeldBody)
    /// A conditional request (with validators) was answered 304 Not Modified: the copy the validators came from
    /// stands. With the validators the 304 sent (empty when it sent none), which replace the copy's (RFC 9111 4.3.4).
    case notModified(Validators)
    /// A probe saw enough to tell the type: the type, the declared length when there was one (else the bytes
    /// seen), and the first bytes the type was told from (for what an image declares, read above: `ImageStructure`),
    /// and whether they are the whole body (it ended within them, rather than the probe stopping it). Nothing was
    /// stored.
    case probed(MediaType, bytes: Int, head: [UInt8], whole: Bool)
    /// Nothing was delivered, for this reason.
    case failed(FetchFailure)
}
