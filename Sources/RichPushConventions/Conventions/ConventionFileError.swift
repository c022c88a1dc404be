import RichPushCore

/// A conventions file is unusable; `detail` names the entry and the field.
public struct ConventionFileError: Error, Sendable, CustomStringConvertible {
    /// What is wrong, and where.
    public let detail: String
    init(_ detail: String) { self.detail = detail }
    public var description: String { detail }
}
