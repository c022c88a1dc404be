#if canImport(Glibc)
    import Glibc
#endif

/// A system call failed.
struct POSIXFailure: Error, CustomStringConvertible {
    /// The operation, and the system's reason.
    let detail: String
    init(_ operation: String, _ code: Int32) { detail = "\(operation): \(String(cString: strerror(code)))" }
    var description: String { detail }
}
