import Foundation

/// A TCP socket bound to a loopback port the kernel picks (port 0), and that port: the port is the caller's for as
/// long as the socket is open.
package func loopbackSocket() throws -> (descriptor: Int32, port: Int) {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
            bind(descriptor, socketAddress, length) == 0 && getsockname(descriptor, socketAddress, &length) == 0
        }
    }
    guard bound else {
        close(descriptor)
        throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EADDRINUSE)
    }
    return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
}

/// A loopback port the kernel says is free now. Another process may take it before the caller's server binds it:
/// a server started on it must notice that (it exits saying the address is in use) and try another.
package func freePort() throws -> Int {
    let (descriptor, port) = try loopbackSocket()
    close(descriptor)
    return port
}

/// Calls `body` with the IPv4 socket address of `host` (dotted) and `port`, and its length.
package func withSocketAddress(
    _ host: String, port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32
) -> Int32 {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr(host)
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
}
