import RichPushCore
import Testing

@testable import RichPushFetch

@Suite("Redirect policy: hops counted, each Location checked, a redirect's body bounded")
struct RedirectPolicyTests {
    static let check = URLCheck(allowHTTP: false, maximumLength: 100, allowedPorts: [443...443])

    @Test("follows up to the maximum, each target recorded in order, then refuses")
    func maximum() {
        var policy = RedirectPolicy(maximum: 2, urlCheck: Self.check)
        for hop in 1...2 {
            let url = "https://example.com/\(hop)"
            #expect(policy.next(location: "/\(hop)", resolved: url) == .success(url))
        }
        #expect(
            policy.next(location: "/3", resolved: "https://example.com/3")
                == .failure(FetchFailure(.tooManyRedirects, "more than 2 redirects")))
        #expect(policy.followed == ["https://example.com/1", "https://example.com/2"])
        var refusing = RedirectPolicy(maximum: 2, urlCheck: Self.check)
        _ = refusing.next(location: "/a b", resolved: "https://example.com/a%20b")
        #expect(refusing.followed.isEmpty, "a refused redirect is not followed")
    }

    @Test(
        "refuses a Location that fails the first URL's checks, raw or resolved",
        arguments: [
            ("/a b", "https://example.com/a%20b", "bad-url"),
            (nil, nil, "bad-url"),
            ("/x", nil, "bad-url"),
            ("http://example.com/", "http://example.com/", "blocked-scheme"),
            ("https://example.com:8443/", "https://example.com:8443/", "blocked-port"),
            ("https://user:pw@example.com/", "https://user:pw@example.com/", "bad-url"),
        ] as [(String?, String?, String)])
    func refused(location: String?, resolved: String?, code: String) {
        var policy = RedirectPolicy(maximum: 3, urlCheck: Self.check)
        guard case .failure(let failure) = policy.next(location: location, resolved: resolved) else {
            Issue.record("followed \(location ?? "no Location")")
            return
        }
        #expect(failure.code.rawValue == code, "\(failure.detail)")
    }

    @Test("a redirect's body is dropped up to 64 KiB, counted afresh at each hop")
    func body() {
        var policy = RedirectPolicy(maximum: 3, urlCheck: Self.check)
        #expect(!policy.isDroppingBody)
        #expect(policy.drop(RedirectPolicy.bodyLimit - 1) == nil)
        #expect(policy.isDroppingBody)
        #expect(policy.drop(1) == nil)
        _ = policy.next(location: "/b", resolved: "https://example.com/b")
        #expect(!policy.isDroppingBody)
        #expect(policy.drop(RedirectPolicy.bodyLimit) == nil)
        #expect(
            policy.drop(1) == FetchFailure(.badResponse, "a redirect with a body of more than 65536 bytes"))
    }
}
