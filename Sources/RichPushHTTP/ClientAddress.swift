#if canImport(Glibc)
    import Glibc
#endif

/// A client's address without its port, as connections are counted per address: an IPv4 address is kept as its
/// IPv4-mapped IPv6 form, so that both families share one key type; an IPv6 address by its /64 prefix, the block
/// one host or one subscriber is given (RFC 6177, RFC 7421: a host picks any of its 2^64 interface identifiers at
/// will, and a client with one /64 filled `--max-connections` from 12 addresses of it past a per-address limit of 2),
/// but for those of `::/64` (the loopback `::1`, the IPv4-mapped and -compatible forms), kept whole.
struct ClientAddress: Hashable, Sendable {
    private let high: UInt64
    private let low: UInt64

    init(_ storage: sockaddr_storage) {
        let family = Int32(storage.ss_family)
        (high, low) = withUnsafeBytes(of: storage) { raw in
            switch family {
            case AF_INET:
                let address = UInt32(bigEndian: raw.load(as: sockaddr_in.self).sin_addr.s_addr)
                return (0, 0xFFFF_0000_0000 | UInt64(address))
            case AF_INET6:
                let address = raw.load(as: sockaddr_in6.self).sin6_addr
                return withUnsafeBytes(of: address) { bytes in
                    let prefix = UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))
                    let interface = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
                    return (prefix, prefix == 0 ? interface : 0)
                }
            default:
                return (0, 0)
            }
        }
    }

    /// The port of an IPv4 or IPv6 address, in network byte order.
    static func port(of storage: sockaddr_storage) -> UInt16 {
        let family = Int32(storage.ss_family)
        return withUnsafeBytes(of: storage) { raw in
            switch family {
            case AF_INET: raw.load(as: sockaddr_in.self).sin_port
            case AF_INET6: raw.load(as: sockaddr_in6.self).sin6_port
            default: 0
            }
        }
    }
}
