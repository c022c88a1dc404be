#if canImport(Glibc)
    import Glibc
#endif

/// A listening address: `ADDRESS:PORT`, an IPv6 address in brackets (`[::1]:8080`); port 0 asks the system
/// for a free one.
package struct SocketAddress: Sendable {
    private enum Storage: Sendable {
        case v4(sockaddr_in)
        case v6(sockaddr_in6)
    }

    private let storage: Storage

    package init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            return nil
        }
        var host = String(text[..<colon])
        let bracketed = host.hasPrefix("[") && host.hasSuffix("]")
        if bracketed { host = String(host.dropFirst().dropLast()) }
        if !bracketed, !host.contains(":") {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
            storage = .v4(address)
        } else {
            guard bracketed else { return nil }
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { return nil }
            storage = .v6(address)
        }
    }

    /// Whether only this host can reach the address: IPv4 127.0.0.0/8, IPv6 `::1`, or `::ffff:127.x.x.x`.
    package var isLoopback: Bool {
        switch storage {
        case .v4(let address):
            return UInt32(bigEndian: address.sin_addr.s_addr) >> 24 == 127
        case .v6(let address):
            let bytes = withUnsafeBytes(of: address.sin6_addr) { Array($0) }
            let mapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
            return bytes == [UInt8](repeating: 0, count: 15) + [1] || (mapped && bytes[12] == 127)
        }
    }

    /// Calls `body` with the address as a `sockaddr` and its length.
    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        switch storage {
        case .v4(var address):
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        case .v6(var address):
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        }
    }

    /// A non-blocking TCP socket listening on this address (`SO_REUSEADDR`; an IPv6 one takes IPv6 only), with
    /// the kernel's largest backlog; its descriptor, or the `errno` that stopped it.
    func listen() -> Result<Int32, Errno> {
        let family = withSockaddr { address, _ in Int32(address.pointee.sa_family) }
        let descriptor = socket(
            family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return .failure(Errno(errno)) }
        var on: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        if family == AF_INET6 {
            setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = withSockaddr { address, length in bind(descriptor, address, length) }
        // SOMAXCONN: the kernel caps the backlog at net.core.somaxconn; connections wait there only until the
        // accepting thread takes them, which it does at once, over a limit or not.
        guard bound == 0, Glibc.listen(descriptor, SOMAXCONN) == 0 else {
            let error = Errno(errno)
            close(descriptor)
            return .failure(error)
        }
        return .success(descriptor)
    }

    /// The port a socket is bound to; 0 when it cannot be read.
    static func boundPort(of descriptor: Int32) -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let read = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard read == 0 else { return 0 }
        return Int(UInt16(bigEndian: ClientAddress.port(of: storage)))
    }
}
