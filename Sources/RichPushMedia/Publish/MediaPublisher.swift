import Dispatch
import RichPushCore

/// Publishes an attachment where devices can fetch it (a CDN's origin directory, a bucket), returning its URL.
/// Called once per attachment after any transformation; must be idempotent (a campaign publishes the same bytes
/// for every payload) and must never leave a half-written file where devices look. Blocking: RichPush calls it
/// off the cooperative pool.
public protocol MediaPublisher: Sendable {
    /// The URL devices fetch `media` from, once it is published there.
    /// - Throws: `PublishFailure` with the reason; nothing is left half-written.
    func publish(_ media: FetchedMedia) throws(PublishFailure) -> String
}

/// Why an attachment could not be published.
public struct PublishFailure: Error, Sendable, Hashable {
    public var detail: String
    public init(_ detail: String) { self.detail = detail }
}

extension MediaPublisher {
    /// `publish(_:)` on a Dispatch queue, never on the cooperative pool (a copy can take a while).
    package func published(_ media: FetchedMedia) async -> Result<String, PublishFailure> {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: Result { () throws(PublishFailure) in try publish(media) })
            }
        }
    }
}
