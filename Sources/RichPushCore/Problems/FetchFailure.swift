/// Why a fetch did not produce a file.
public struct FetchFailure: Error, Sendable, Hashable {
    /// The stable problem code, one of `EnrichmentProblem.Code.known(in: .problem)`.
    public var code: EnrichmentProblem.Code
    /// The specifics (curl's message, the refused address, the sniffed type).
    public var detail: String
    /// What the transport saw, for a caller that decides whether to fetch again (`RetryPolicy`); nil when
    /// nothing more than the code is known.
    public var cause: Cause?

    /// What the transport saw when a fetch failed.
    public enum Cause: Sendable, Hashable {
        /// Nothing accepted the connection (curl's CURLE_COULDNT_CONNECT, no policy refusal).
        case connectionRefused
        /// The connection broke before the response was complete: reset, or closed with no response at all
        /// (CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING).
        case connectionDropped
        /// No connection was made within the connect timeout.
        case connectTimeout
        /// The final response's status, with its Retry-After header value as sent, if any.
        case status(Int, retryAfter: String?)
    }

    /// A failure.
    public init(_ code: EnrichmentProblem.Code, _ detail: String, cause: Cause? = nil) {
        assert(code.domains.contains(.problem), "\(code) is not a problem code")
        self.code = code
        self.detail = detail
        self.cause = cause
    }
}
