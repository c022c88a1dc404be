import RichPush

extension OptionValue where Value == CIDRRange {
    /// An address or a CIDR range, IPv4 or IPv6.
    static var cidr: Self {
        Self(
            placeholder: "cidr", range: nil,
            parse: { text, option throws(UsageError) in
                guard let range = CIDRRange(text) else {
                    throw UsageError("--\(option): '\(text)' is not an address or CIDR range")
                }
                return range
            },
            describe: { $0.description })
    }
}

extension OptionValue where Value == ClosedRange<Int> {
    /// A port or a range `LOW-HIGH`. Only the text is read here (a range must be LOW <= HIGH to exist); the
    /// library checks the ports.
    static var ports: Self {
        Self(
            placeholder: "port[-port]", range: nil,
            parse: { text, option throws(UsageError) in
                let ports =
                    "\(Enricher.Configuration.portRange.lowerBound)-\(Enricher.Configuration.portRange.upperBound)"
                let bounds = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).map { Int($0) }
                guard let low = bounds.first ?? nil, let high = bounds.last ?? nil, low <= high else {
                    throw UsageError("--\(option): '\(text)' is not a port or a range LOW-HIGH within \(ports)")
                }
                return low...high
            },
            describe: { "\($0.lowerBound)-\($0.upperBound)" })
    }
}
