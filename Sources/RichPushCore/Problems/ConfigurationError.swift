/// A `Enricher.Configuration` field holds a value RichPush cannot work with; thrown by
/// `Enricher.Configuration.validate()`, and so by `Enricher.init` and `Fetcher.init` before anything starts.
///
/// `field` is the field's path as written in code (`limits.maximumReferences`, `network.resolve[2]`); `code` is
/// stable (for programs and metrics); `detail` says what is wrong and what is accepted, without the field's name,
/// so a front end can put its own name for the field in front (the CLI names its flag).
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The field's path, as written in code: `limits.maximumReferences`, `network.resolve[2]`.
    public let field: String
    /// The stable code, one of `EnrichmentProblem.Code.known(in: .configuration)`.
    public let code: EnrichmentProblem.Code
    /// What is wrong, and what is accepted.
    public let detail: String

    /// An error.
    public init(field: String, code: EnrichmentProblem.Code, detail: String) {
        assert(code.domains.contains(.configuration), "\(code) is not a configuration code")
        self.field = field
        self.code = code
        self.detail = detail
    }

    /// `<field>: <detail>`.
    public var description: String { "\(field): \(detail)" }
}
