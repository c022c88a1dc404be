import Foundation

/// The origin could not start.
public struct OriginError: Error, CustomStringConvertible {
    /// What failed: the operation, and the system's reason.
    public let detail: String

    init(_ operation: String, _ code: Int32) {
        detail = "\(operation): \(String(cString: strerror(code)))"
    }

    public var description: String { detail }
}
