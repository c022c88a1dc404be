import RichPushCore

/// Why a server could not start.
package struct HTTPServerError: Error, CustomStringConvertible {
    /// What failed: the address, and the system's reason.
    package let detail: String

    package var description: String { detail }
}
