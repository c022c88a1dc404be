#if canImport(Glibc)
    import Glibc
#endif

/// An `errno` value, with its text.
package struct Errno: Error, CustomStringConvertible, Sendable {
    package let code: Int32
    init(_ code: Int32) { self.code = code }
    package var description: String { String(cString: strerror(code)) }
}
