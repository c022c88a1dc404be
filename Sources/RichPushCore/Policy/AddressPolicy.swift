/// Which addresses RichPush may connect to, judged on the address a connection actually goes to (after DNS,
/// on every redirect hop and for every reused connection), never on the URL text.
///
/// The order of judgement: a range closed with `denied` refuses; else a range opened with `allowed` admits;
/// else the built-in `refusedByDefault` ranges refuse; else the address is public and admitted. An IPv6 address
/// that embeds an IPv4 one (mapped, compatible, NAT64, 6to4, Teredo) is judged by the IPv4 address inside as
/// well: it is refused if either is.
public struct AddressPolicy: Sendable, Hashable {
    /// Ranges opened on top of the defaults (`--allow-network`).
    public var allowed: [CIDRRange]
    /// Ranges closed on top of the defaults (`--deny-network`); these win over `allowed`.
    public var denied: [CIDRRange]

    /// The policy: refuse the non-public ranges, open `allowed`, close `denied`.
    public init(allowed: [CIDRRange] = [], denied: [CIDRRange] = []) {
        self.allowed = allowed
        self.denied = denied
    }

    /// The ranges refused unless opened: everything that is not a public unicast address, where a push sender
    /// could reach the network we run in (its databases, its cloud metadata endpoint at 169.254.169.254).
    public static let refusedByDefault: [(range: CIDRRange, reason: String)] = [
        ("0.0.0.0/8", "unspecified (this network)"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "carrier-grade NAT"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local (cloud metadata)"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol assignments"),
        ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "6to4 relay anycast"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved (and broadcast)"),
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("100::/64", "discard-only"),
        ("2001:2::/48", "benchmarking"),
        ("2001:db8::/32", "documentation"),
        ("3fff::/20", "documentation"),
        ("fc00::/7", "unique local (private)"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    ].map { (CIDRRange($0.0)!, $0.1) }

    /// Why `address` is refused, or nil when it may be connected to.
    ///
    /// An address that names no host on a network but reaches this one when connected to (`0.0.0.0/8`, `::`)
    /// is judged as loopback too: it is refused unless loopback itself is admitted, whatever range admits it.
    public func refusal(of address: IPAddress) -> String? {
        if let reason = judgeWithHost(address) { return reason }
        if let inner = address.embeddedIPv4, let reason = judgeWithHost(inner) {
            return "embeds \(inner), \(reason)"
        }
        return nil
    }

    private func judgeWithHost(_ address: IPAddress) -> String? {
        if let reason = judge(address) { return reason }
        if let loopback = Self.thisHost(address), let reason = judge(loopback) {
            return "\(address) reaches this host as \(loopback): \(reason)"
        }
        return nil
    }

    /// The loopback address a connection to `address` reaches, for the addresses that mean "this host".
    static func thisHost(_ address: IPAddress) -> IPAddress? {
        if address.bytes.count == 4, address.bytes[0] == 0 { return IPAddress(bytes: [127, 0, 0, 1]) }
        if address.bytes.count == 16, address.bytes.allSatisfy({ $0 == 0 }) {
            return IPAddress(bytes: [UInt8](repeating: 0, count: 15) + [1])
        }
        return nil
    }

    private func judge(_ address: IPAddress) -> String? {
        if let range = denied.first(where: { $0.contains(address) }) { return "\(address) is in denied range \(range)" }
        if allowed.contains(where: { $0.contains(address) }) { return nil }
        if let entry = Self.refusedByDefault.first(where: { $0.range.contains(address) }) {
            return "\(address) is \(entry.reason) (\(entry.range))"
        }
        return nil
    }

    public static func == (lhs: AddressPolicy, rhs: AddressPolicy) -> Bool {
        lhs.allowed == rhs.allowed && lhs.denied == rhs.denied
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(allowed)
        hasher.combine(denied)
    }
}
