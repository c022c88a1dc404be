#if canImport(Glibc)
    import Glibc
#endif

/// A client's address without its port, as connections are counted per address: an IPv4 address is kept as its
/// IPv4-mapped IPv6 form, so that both families share one key type; an IPv6 address whole.
///
/// Why not an IPv6 client's /64 (the block a host or subscriber is given, any of whose 2^64 addresses it may use:
/// one filled `--max-connections` from 12 of them past a per-address limit of 2): a /64 is also one cloud subnet, one
/// container bridge, one LAN, and every IPv4 client behind NAT64; the gateways of a fleet in one subnet would share
/// one address's limit. Against a client using many addresses, `--max-connections` stands.
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
                    (
                        UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)),
                        UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
                    )
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
