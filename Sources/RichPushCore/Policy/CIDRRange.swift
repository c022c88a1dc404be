/// A range of addresses in CIDR notation (`10.0.0.0/8`, `fc00::/7`); a bare address is a range of one.
public struct CIDRRange: Sendable, Hashable, CustomStringConvertible {
    /// The first address of the range (host bits cleared).
    public let network: IPAddress
    /// The prefix length in bits.
    public let prefixLength: Int

    /// Parses `ADDRESS/BITS` or a bare address; nil when either part is invalid.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = IPAddress(String(parts[0])) else { return nil }
        let maximum = address.bytes.count * 8
        var length = maximum
        if parts.count == 2 {
            guard let bits = Int(parts[1]), bits >= 0, bits <= maximum, parts[1].allSatisfy(\.isNumber) else {
                return nil
            }
            length = bits
        }
        self.prefixLength = length
        self.network = IPAddress(bytes: Self.masked(address.bytes, length))!
    }

    /// Whether `address` is in this range (an IPv4 address is never in an IPv6 range, nor the reverse).
    public func contains(_ address: IPAddress) -> Bool {
        address.bytes.count == network.bytes.count && Self.masked(address.bytes, prefixLength) == network.bytes
    }

    static func masked(_ bytes: [UInt8], _ length: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let bits = min(max(length - index * 8, 0), 8)
            return bits == 8 ? byte : byte & UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
        }
    }

    public var description: String { "\(network)/\(prefixLength)" }
}
