/// Why an input is not a payload. Its `code` is stable: it goes into JSON output (as the problem code of an
/// `invalid` result) and metrics; it is one of `EnrichmentProblem.Code.known(in: .invalid)`.
public struct PayloadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stable code (`not-json`, `payload-too-large`, ...).
    public let code: EnrichmentProblem.Code
    /// A human message with the detail (a byte offset, a size, the system's error text).
    public let detail: String

    /// An error with this code and detail.
    public init(_ code: EnrichmentProblem.Code, _ detail: String) {
        assert(code.domains.contains(.invalid), "\(code) is not a code of an invalid input")
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code): \(detail)" }
}
