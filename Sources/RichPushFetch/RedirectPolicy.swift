import RichPushCore

/// The redirects of one transfer, followed by the transfer rather than by curl: how many so far, each Location
/// held to the same checks as the first URL (`URLCheck`) before the next request is made, and a redirect's body
/// read and dropped within a bound, so that its connection can be reused.
struct RedirectPolicy {
    /// The most body a redirect response may carry.
    static let bodyLimit = 64 * 1024

    /// The most redirects followed (`NetworkSettings.maximumRedirects`).
    let maximum: Int
    let urlCheck: URLCheck
    /// Redirects met so far (the one over `maximum` included).
    private(set) var hops = 0
    /// Each redirect's target, in the order followed: the media's provenance. Empty (no allocation) without one.
    private(set) var followed: [String] = []
    /// Body bytes of the current redirect response, read and dropped; nil when the response is not a redirect's.
    private(set) var droppedBytes: Int?

    init(maximum: Int, urlCheck: URLCheck) {
        self.maximum = maximum
        self.urlCheck = urlCheck
    }

    /// Where the next hop goes: `resolved` (curl's resolution of `location` against the current URL, nil when it
    /// has none), once both the raw Location and the resolved URL pass the checks; else why the redirect is refused.
    mutating func next(location: String?, resolved: String?) -> Result<String, FetchFailure> {
        hops += 1
        droppedBytes = nil
        guard hops <= maximum else {
            return .failure(FetchFailure(.tooManyRedirects, "more than \(maximum) redirects"))
        }
        let raw = location ?? ""
        if let refusal = urlCheck.checkText(raw) {
            return .failure(FetchFailure(refusal.code, "a redirect's Location: \(refusal.detail)"))
        }
        guard let target = resolved else {
            return .failure(FetchFailure(.badURL, "a redirect's Location cannot be resolved: \(raw)"))
        }
        if let refusal = urlCheck.check(target) {
            return .failure(FetchFailure(refusal.code, "a redirect to \(target.prefix(200)): \(refusal.detail)"))
        }
        followed.append(target)
        return .success(target)
    }

    /// Whether the response being received is a redirect whose body is being dropped.
    var isDroppingBody: Bool { droppedBytes != nil }

    /// Drops `count` more bytes of a redirect's body; returns why the transfer must stop (over `bodyLimit`), or nil.
    mutating func drop(_ count: Int) -> FetchFailure? {
        let dropped = (droppedBytes ?? 0) + count
        droppedBytes = dropped
        guard dropped <= Self.bodyLimit else {
            return FetchFailure(.badResponse, "a redirect with a body of more than \(Self.bodyLimit) bytes")
        }
        return nil
    }
}
