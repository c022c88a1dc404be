import RichPushCore

/// Why an image could not be transformed; `code` is `too-many-pixels`, `damaged-image`, `transform-failed` or
/// `expired`.
public struct TransformFailure: Error, Sendable, Hashable {
    public var code: EnrichmentProblem.Code
    public var detail: String

    public init(_ code: EnrichmentProblem.Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }
}
