/// Something that kept a reference from being attached, or that a user needs to hear about a payload.
///
/// `code` is stable (it goes into JSON output and metrics); `detail` carries the specifics.
public struct EnrichmentProblem: Sendable, Hashable, CustomStringConvertible {
    /// The URL or field the problem is about.
    public var source: String
    /// The stable code.
    public var code: Code
    /// The specifics, for a human.
    public var detail: String
    /// For a reference that was fetched, how many fetches were made (see `RetryPolicy`); nil for a problem of
    /// the payload itself (a field, an option).
    public var attempts: Int?

    /// A problem.
    public init(source: String, code: Code, detail: String, attempts: Int? = nil) {
        self.source = source
        self.code = code
        self.detail = detail
        self.attempts = attempts
    }

    public var description: String { "\(code) (\(source)): \(detail)" }
}
