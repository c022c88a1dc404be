/// A `Enricher.Configuration` field holds a value RichPush cannot work with; thrown by `Enricher.Configuration.validate()`, and so
/// by `Enricher.init` and `Fetcher.init` before anything starts.
///
/// `field` is the field's path as written in code (`limits.maximumReferences`, `network.resolve[2]`); `code` is
/// stable (for programs and metrics); `detail` says what is wrong and what is accepted, without the field's name,
/// so a front end can put its own name for the field in front (the CLI names its flag).
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable machine code.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// The code's text.
        public let rawValue: String
        /// A code; prefer the static members.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A number or duration outside the field's range.
        public static let outOfRange = Code("out-of-range")
        /// Text not in the field's form (a `resolve` entry, a relative path, a control character).
        public static let malformed = Code("malformed")
        /// A file the field names cannot be read.
        public static let unreadable = Code("unreadable")
    }

    /// The field's path, as written in code: `limits.maximumReferences`, `network.resolve[2]`.
    public let field: String
    /// The stable code.
    public let code: Code
    /// What is wrong, and what is accepted.
    public let detail: String

    /// An error.
    public init(field: String, code: Code, detail: String) {
        self.field = field
        self.code = code
        self.detail = detail
    }

    /// `<field>: <detail>`.
    public var description: String { "\(field): \(detail)" }
}
