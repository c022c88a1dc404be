import RichPushCore

/// The address policy and the allowed ports, judged where a connection is made rather than on the URL: on the
/// address a socket is about to open to (CURLOPT_OPENSOCKETFUNCTION), and on the address and port of every
/// connection about to carry a request, reused ones included (CURLOPT_PREREQFUNCTION). It takes the values curl
/// hands over and returns a verdict; the transfer keeps the refusals (`Refusals`) for when curl then fails.
struct ConnectionPolicy: Sendable {
    /// Why a connection is refused.
    enum Refusal: Equatable, Sendable {
        /// The address, with the policy's reason.
        case address(String)
        /// The port.
        case port(Int)
    }

    /// The latest refusals of a hop, one of each kind: what a connect failure is reported as (`CurlFailure`).
    struct Refusals: Equatable, Sendable {
        var address: String?
        var port: Int?

        /// Keeps `refusal` as the latest of its kind.
        mutating func record(_ refusal: Refusal) {
            switch refusal {
            case .address(let reason): address = reason
            case .port(let port): self.port = port
            }
        }
    }

    let network: NetworkSettings

    /// A socket about to be opened to `address` (nil: an address of a family that is neither IPv4 nor IPv6) on
    /// `port`: the address is judged first, then the port. Nil when it may be opened.
    func refusal(opening address: IPAddress?, port: Int) -> Refusal? {
        guard let address else { return .address("an address of an unsupported family") }
        if let reason = network.addressPolicy.refusal(of: address) { return .address(reason) }
        if !network.isAllowed(port: port) { return .port(port) }
        return nil
    }

    /// A connection about to carry a request, new or reused, to `address` (curl's text of it; nil when curl has
    /// none) on `port`: the port is judged first, then the address. Nil when the request may be sent.
    func refusal(requestingOn address: String?, port: Int) -> Refusal? {
        if !network.isAllowed(port: port) { return .port(port) }
        guard let text = address, let ip = IPAddress(text) else { return .address("an unparseable connection address") }
        if let reason = network.addressPolicy.refusal(of: ip) { return .address(reason) }
        return nil
    }
}
