import Dispatch
import RichPushCore

/// Publishes an attachment where devices can fetch it (a CDN's origin directory, a bucket), returning its URL.
/// Called once per attachment after any transformation; must be idempotent (a campaign publishes the same bytes
/// for every payload) and must never leave a half-written file where devices look.
///
/// A publisher implements `publish(_:)` (blocking: RichPush calls it off the cooperative pool, with no deadline
/// of its own), or `publish(_:deadline:)` when it can keep the payload's deadline (an upload that can be cut short),
/// or both.
public protocol MediaPublisher: Sendable {
    /// The URL devices fetch `media` from, once it is published there.
    /// - Throws: `PublishFailure` with the reason; nothing is left half-written.
    func publish(_ media: FetchedMedia) throws(PublishFailure) -> String

    /// `publish(_:)`, finished by `deadline` or failed with code `expired`; what RichPush calls. By default,
    /// `publish(_:)` on a Dispatch queue (the deadline is not kept: a local copy is not cut short).
    func publish(_ media: FetchedMedia, deadline: ContinuousClock.Instant) async throws(PublishFailure) -> String

    /// What this publisher has done so far, for `/metrics`; nil (the default) when it counts nothing.
    var statistics: PublishStatistics? { get }
}

/// Why an attachment could not be published.
public struct PublishFailure: Error, Sendable, Hashable {
    /// What went wrong, for people (a store's answer is quoted: its code, its HTTP status, its message).
    public var detail: String
    /// A short stable word for metrics: the store's own error code (`AccessDenied`, `NoSuchBucket`,
    /// `SignatureDoesNotMatch`), `expired` when the deadline came first, `network` when the store could not be
    /// reached; nil when the publisher gives none.
    public var code: String?

    /// A failure with a reason and, optionally, a code.
    public init(_ detail: String, code: String? = nil) {
        self.detail = detail
        self.code = code
    }
}

/// What a publisher that uploads has done, counted since it was made (the service's `/metrics`).
public struct PublishStatistics: Sendable, Hashable {
    /// Objects written to the store.
    public var uploads = 0
    /// Bytes of the objects written.
    public var uploadedBytes = 0
    /// Attachments already in the store with the same length: not written again.
    public var hits = 0
    /// Attachments not published, by `PublishFailure.code` (`other` when it has none, or when `maximumCodes`
    /// others are counted already: a store chooses its codes, and each is a series of the service's `/metrics`).
    public var failures: [String: Int] = [:]
    /// How many codes `failures` counts apart: 32.
    public static let maximumCodes = 32
    /// How many uploads took at most each of `durationBounds` (seconds), not cumulative: the last count is of those
    /// slower than the last bound. Uploads only, retries included; a hit's `HEAD` is not counted.
    public var durationCounts: [Int]
    /// The sum of the uploads' durations, in seconds.
    public var durationSum = 0.0

    /// The upper bounds of the duration histogram, in seconds: from a loopback store's few milliseconds to a
    /// distant one's seconds.
    public static let durationBounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// No counts yet.
    public init() { durationCounts = Array(repeating: 0, count: Self.durationBounds.count + 1) }

    /// Counts one publication that failed with `code`.
    public mutating func countFailure(_ code: String?) {
        var key = code ?? "other"
        if failures[key] == nil, failures.count >= Self.maximumCodes { key = "other" }
        failures[key, default: 0] += 1
    }

    /// Counts one upload of `bytes` that took `duration`.
    public mutating func recordUpload(bytes: Int, duration: Duration) {
        uploads += 1
        uploadedBytes += bytes
        let seconds = duration.inSeconds
        durationSum += seconds
        durationCounts[Self.durationBounds.firstIndex(where: { seconds <= $0 }) ?? Self.durationBounds.count] += 1
    }
}

extension MediaPublisher {
    public func publish(_ media: FetchedMedia, deadline: ContinuousClock.Instant) async throws(PublishFailure)
        -> String
    {
        let result = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: Result { () throws(PublishFailure) in try publish(media) })
            }
        }
        return try result.get()
    }

    public var statistics: PublishStatistics? { nil }

    /// `publish(_:deadline:)` as a result.
    package func published(_ media: FetchedMedia, deadline: ContinuousClock.Instant) async -> Result<
        String, PublishFailure
    > {
        do { return .success(try await publish(media, deadline: deadline)) } catch { return .failure(error) }
    }
}
