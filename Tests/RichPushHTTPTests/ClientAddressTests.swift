import Testing

@testable import RichPushHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// The key connections are counted by per address (no I/O).
@Suite struct ClientAddressTests {
    static func address(_ text: String) -> ClientAddress {
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { raw in
            if text.contains(":") {
                var address = sockaddr_in6()
                address.sin6_family = sa_family_t(AF_INET6)
                #expect(inet_pton(AF_INET6, text, &address.sin6_addr) == 1, "\(text)")
                raw.storeBytes(of: address, as: sockaddr_in6.self)
            } else {
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                #expect(inet_pton(AF_INET, text, &address.sin_addr) == 1, "\(text)")
                raw.storeBytes(of: address, as: sockaddr_in.self)
            }
        }
        return ClientAddress(storage)
    }

    @Test(
        """
        an IPv6 client is counted by its whole address (a /64 is also a cloud subnet or a container bridge of many \
        hosts); an IPv4 client as its IPv4-mapped address
        """)
    func keys() {
        #expect(Self.address("fd00::2") != Self.address("fd00::8"))
        #expect(Self.address("2001:db8:1:2:aaaa::1") != Self.address("2001:db8:1:2:ffff:1:2:3"))
        #expect(Self.address("2001:db8:1:2::1") == Self.address("2001:db8:1:2:0:0:0:1"))
        #expect(Self.address("2001:db8:1:2::1") != Self.address("2001:db8:1:3::1"))
        #expect(Self.address("::1") != Self.address("::2"))
        #expect(Self.address("::ffff:192.0.2.1") == Self.address("192.0.2.1"))
        #expect(Self.address("192.0.2.1") != Self.address("192.0.2.2"))
        #expect(Self.address("::ffff:192.0.2.1") != Self.address("::ffff:192.0.2.2"))
    }
}
