import RichPushCore
import Testing

@testable import RichPushFetch

@Suite("Connection policy: addresses and ports judged where connections are made")
struct ConnectionPolicyTests {
    static let policy = ConnectionPolicy(network: NetworkSettings())

    @Test("a socket: the address first, then the port; an unknown family is refused")
    func opening() throws {
        let loopback = try #require(IPAddress("127.0.0.1"))
        let public4 = try #require(IPAddress("93.184.215.14"))
        #expect(Self.policy.refusal(opening: public4, port: 443) == nil)
        #expect(Self.policy.refusal(opening: public4, port: 25) == .port(25))
        guard case .address(let reason)? = Self.policy.refusal(opening: loopback, port: 25) else {
            Issue.record("a loopback address on a refused port was not refused for its address")
            return
        }
        #expect(reason.contains("loopback"))
        #expect(Self.policy.refusal(opening: nil, port: 443) == .address("an address of an unsupported family"))
    }

    @Test("a request on a connection, reused ones included: the port first, then the address as curl writes it")
    func requesting() {
        #expect(Self.policy.refusal(requestingOn: "2606:2800:21f:cb07:6820:80da:af6b:8b2c", port: 443) == nil)
        #expect(Self.policy.refusal(requestingOn: "127.0.0.1", port: 25) == .port(25))
        #expect(Self.policy.refusal(requestingOn: "127.0.0.1", port: 443) != nil)
        #expect(Self.policy.refusal(requestingOn: nil, port: 443) == .address("an unparseable connection address"))
        let unparseable = Self.policy.refusal(requestingOn: "not an address", port: 80)
        #expect(unparseable == .address("an unparseable connection address"))
    }

    @Test("opened ranges and ports are honoured")
    func opened() throws {
        var network = NetworkSettings()
        network.addressPolicy = AddressPolicy(allowed: [try #require(CIDRRange("127.0.0.0/8"))])
        network.allowedPorts.append(9000...9001)
        let policy = ConnectionPolicy(network: network)
        #expect(policy.refusal(requestingOn: "127.0.0.1", port: 9001) == nil)
        #expect(policy.refusal(opening: IPAddress("127.0.0.2"), port: 9000) == nil)
    }

    @Test("the refusals keep the latest of each kind")
    func refusals() {
        var refusals = ConnectionPolicy.Refusals()
        refusals.record(.port(25))
        refusals.record(.address("a"))
        refusals.record(.address("b"))
        #expect(refusals == ConnectionPolicy.Refusals(address: "b", port: 25))
    }
}
