#if canImport(Glibc)
    import Glibc
#endif

/// An IPv4 or IPv6 address as its network-order bytes (4 or 16).
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address bytes: 4 for IPv4, 16 for IPv6.
    public let bytes: [UInt8]

    /// An address from 4 or 16 bytes; nil for any other count.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Parses the canonical text forms `inet_pton` accepts (dotted-quad IPv4, IPv6 with `::`), with optional
    /// brackets around IPv6. Shorthands such as `127.1` are not accepted as text here: curl turns those into
    /// real addresses, and those are what the policy judges at connect time.
    public init?(_ text: String) {
        var text = text
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self.bytes = withUnsafeBytes(of: v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            self.bytes = withUnsafeBytes(of: v6) { Array($0) }
            return
        }
        return nil
    }

    /// Whether this is an IPv4 address.
    public var isIPv4: Bool { bytes.count == 4 }

    /// The IPv4 address an IPv6 address carries inside it, for the forms that route to one: IPv4-mapped
    /// (`::ffff:0:0/96`), IPv4-compatible (`::/96`, other than `::` and `::1`), NAT64 (`64:ff9b::/96`), 6to4
    /// (`2002::/16`) and Teredo (`2001::/32`, the client address, stored inverted).
    public var embeddedIPv4: IPAddress? {
        guard bytes.count == 16 else { return nil }
        let prefix12 = Array(bytes[0..<12])
        if prefix12 == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] { return IPAddress(bytes: Array(bytes[12..<16])) }
        if prefix12 == [0, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0] { return IPAddress(bytes: Array(bytes[12..<16])) }
        if prefix12.allSatisfy({ $0 == 0 }) {
            let tail = Array(bytes[12..<16])
            // :: and ::1 are the unspecified and loopback addresses, judged as IPv6.
            if tail == [0, 0, 0, 0] || tail == [0, 0, 0, 1] { return nil }
            return IPAddress(bytes: tail)
        }
        if bytes[0] == 0x20, bytes[1] == 0x02 { return IPAddress(bytes: Array(bytes[2..<6])) }
        if bytes[0] == 0x20, bytes[1] == 0x01, bytes[2] == 0, bytes[3] == 0 {
            return IPAddress(bytes: bytes[12..<16].map { $0 ^ 0xFF })
        }
        return nil
    }

    public var description: String {
        var buffer = [CChar](repeating: 0, count: 64)
        if isIPv4 {
            var v4 = in_addr()
            withUnsafeMutableBytes(of: &v4) { $0.copyBytes(from: bytes) }
            inet_ntop(AF_INET, &v4, &buffer, socklen_t(buffer.count))
        } else {
            var v6 = in6_addr()
            withUnsafeMutableBytes(of: &v6) { $0.copyBytes(from: bytes) }
            inet_ntop(AF_INET6, &v6, &buffer, socklen_t(buffer.count))
        }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
