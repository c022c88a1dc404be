/// How transfers are made and where they may go.
public struct NetworkSettings: Sendable {
    /// Allow `http` as well as `https`, at every hop. Default false: a media URL in a push is public content
    /// and https costs nothing; plain http lets anyone on the path swap the media.
    public var allowHTTP: Bool = false
    /// The most redirects followed, each held to the same scheme rule. Default 3: CDNs use one or two;
    /// more is a loop or an attempt to walk us somewhere.
    public var maximumRedirects: Int = 3
    /// The longest wait for a connection (DNS, TCP and TLS). Default 10 s: well within the payload's
    /// deadline, far beyond any healthy origin.
    public var connectTimeout: Duration = .seconds(10)
    /// A transfer slower than `lowSpeedBytesPerSecond` for `lowSpeedWindow` is aborted (curl's
    /// CURLOPT_LOW_SPEED_LIMIT and _TIME). Defaults 1,024 B/s over 5 s: such a server would not deliver a
    /// useful image before the deadline, and holding its connection costs a slot.
    public var lowSpeedBytesPerSecond: Int = 1024
    /// See `lowSpeedBytesPerSecond`.
    public var lowSpeedWindow: Duration = .seconds(5)
    /// Which addresses may be connected to. Default: public unicast addresses only.
    public var addressPolicy = AddressPolicy()
    /// The ports connections may go to, at every hop. Default 80, 443, 8080 and 8443: where public web media
    /// lives. Other ports are where a sender would reach mail, database and admin services on hosts that
    /// are public; a self-hosted media server on another port is opened with `--allow-port`.
    public var allowedPorts: [ClosedRange<Int>] = [80...80, 443...443, 8080...8080, 8443...8443]
    /// Names pinned to addresses, as curl's `--resolve HOST:PORT:ADDR`. Default none.
    public var resolve: [String] = []
    /// A file of CA certificates to trust instead of the system's. Default nil (the system bundle).
    public var caBundle: String? = nil
    /// The longest URL accepted. Default 2,048 characters: what browsers and CDNs reliably carry; a longer
    /// one in a push is an attack or a mistake.
    public var maximumURLLength: Int = 2048
    /// The most connections open at once across all hosts (CURLMOPT_MAX_TOTAL_CONNECTIONS); more transfers
    /// wait their turn. Default 64: curl's own `--parallel-max` default is 50; 64 saturates loopback and a
    /// 1 Gb/s link without starving the loop on 2 cores.
    public var maximumConnections: Int = 64
    /// The most connections to one host (CURLMOPT_MAX_HOST_CONNECTIONS). Default 16: a campaign's CDN gets
    /// parallelism without one slow origin taking every slot.
    public var maximumConnectionsPerHost: Int = 16
    /// The User-Agent sent. Default `RichPush/<version>`.
    public var userAgent: String = "RichPush/\(RichPushVersion.current)"

    /// The documented defaults.
    public init() {}

    /// Whether connections may go to `port`.
    public func isAllowed(port: Int) -> Bool { allowedPorts.contains { $0.contains(port) } }
}
