#if canImport(Glibc)
    import Glibc
#endif

/// Writing an attachment failed, or the attachments root is refused; `detail` names the operation, the path
/// and the reason.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// What failed and why.
    public let detail: String
    /// The system's errno, or 0 when the reason is ours.
    package let code: Int32

    package init(detail: String) {
        self.detail = detail
        code = 0
    }

    package init(_ operation: String, _ code: Int32) {
        self.detail = "\(operation): \(String(cString: strerror(code)))"
        self.code = code
    }

    public var description: String { detail }
}
