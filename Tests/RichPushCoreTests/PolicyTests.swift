import Testing

@testable import RichPushCore

@Suite("Address policy")
struct PolicyTests {
    @Test(
        "non-public addresses are refused by default",
        arguments: [
            "127.0.0.1", "127.255.0.9", "0.0.0.0", "10.0.0.5", "172.16.3.4", "172.31.255.255", "192.168.1.1",
            "100.64.0.1", "169.254.169.254", "224.0.0.1", "255.255.255.255", "240.0.0.1", "192.0.2.10",
            "198.18.0.1", "198.51.100.7", "203.0.113.9", "::1", "::", "fc00::1", "fd12:3456::1", "fe80::1",
            "ff02::1", "2001:db8::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::127.0.0.1", "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::", "2001:0:4136:e378:8000:63bf:80ff:fffe",
        ])
    func refused(_ text: String) throws {
        let address = try #require(IPAddress(text))
        #expect(AddressPolicy().refusal(of: address) != nil)
    }

    @Test(
        "public addresses are admitted",
        arguments: ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8", "172.32.0.1"])
    func admitted(_ text: String) throws {
        #expect(AddressPolicy().refusal(of: try #require(IPAddress(text))) == nil)
    }

    @Test("allowed ranges open, denied ranges close and win")
    func allowAndDeny() throws {
        let policy = AddressPolicy(
            allowed: [CIDRRange("127.0.0.0/8")!, CIDRRange("10.1.0.0/16")!],
            denied: [CIDRRange("127.0.0.2")!, CIDRRange("8.8.8.0/24")!])
        #expect(policy.refusal(of: IPAddress("127.0.0.1")!) == nil)
        #expect(policy.refusal(of: IPAddress("::ffff:127.0.0.1")!) == nil)
        #expect(policy.refusal(of: IPAddress("127.0.0.2")!) != nil)
        #expect(policy.refusal(of: IPAddress("10.1.2.3")!) == nil)
        #expect(policy.refusal(of: IPAddress("10.2.0.1")!) != nil)
        #expect(policy.refusal(of: IPAddress("8.8.8.8")!)?.contains("denied") == true)
    }

    @Test(
        "CIDR parsing",
        arguments: [
            ("10.0.0.0/8", true), ("10.1.2.3", true), ("::1/128", true), ("fc00::/7", true),
            ("10.0.0.0/33", false), ("10.0.0/8", false), ("x", false), ("10.0.0.0/-1", false), ("::/129", false),
            ("1.2.3.4/", false),
        ])
    func cidr(text: String, valid: Bool) {
        #expect((CIDRRange(text) != nil) == valid)
    }

    @Test("a range masks its host bits")
    func masking() {
        #expect(CIDRRange("10.9.8.7/8")?.description == "10.0.0.0/8")
        #expect(CIDRRange("172.20.0.1/12")!.contains(IPAddress("172.31.0.1")!))
        #expect(!CIDRRange("172.16.0.0/12")!.contains(IPAddress("172.32.0.1")!))
    }
}
