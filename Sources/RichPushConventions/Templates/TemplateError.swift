import RichPushCore

/// A template cannot be rendered: the detail names the expression or property.
public struct TemplateError: Error, Sendable, CustomStringConvertible {
    /// What is wrong.
    public let detail: String
    init(_ detail: String) { self.detail = detail }
    public var description: String { detail }
}
