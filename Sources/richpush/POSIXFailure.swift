#if canImport(Glibc)
    import Glibc
#endif

/// A system call failed.
struct POSIXFailure: Error, CustomStringConvertible {
    let description: String
    init(_ operation: String, _ code: Int32) { description = "\(operation): \(String(cString: strerror(code)))" }
}
