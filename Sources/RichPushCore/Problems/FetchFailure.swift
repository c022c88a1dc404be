/// Why a fetch did not produce a file.
///
/// Its fields are kept in one box its copies share (`SharedFields`), as `FetchedMedia`'s are: every `Result` of a
/// fetch is as large as its larger side, and async functions on an attachment's way hold several across their
/// suspensions (inline, 56 bytes: each such `Result` 64 bytes of a frame's slot, one pointer now).
public struct FetchFailure: Error, Sendable, Hashable {
    /// The stable problem code, one of `EnrichmentProblem.Code.known(in: .problem)`.
    public var code: EnrichmentProblem.Code {
        get { stored.fields.code }
        set { stored.fields.code = newValue }
    }
    /// The specifics (curl's message, the refused address, the sniffed type).
    public var detail: String {
        get { stored.fields.detail }
        set { stored.fields.detail = newValue }
    }
    /// What the transport saw, for a caller that decides whether to fetch again (`RetryPolicy`); nil when
    /// nothing more than the code is known.
    public var cause: Cause? {
        get { stored.fields.cause }
        set { stored.fields.cause = newValue }
    }

    /// The stored fields, as the accessors above say them.
    private struct Fields: Hashable, Sendable {
        var code: EnrichmentProblem.Code
        var detail: String
        var cause: Cause?
    }

    /// Where the fields are: the value's one stored property.
    private var stored: SharedFields<Fields>

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
        stored = SharedFields(Fields(code: code, detail: detail, cause: cause))
    }
}

extension FetchFailure: CustomReflectable {
    /// Its fields, as a struct's are shown (a log line, a test's failed expectation), rather than its box.
    public var customMirror: Mirror {
        stored.mirror(of: self)
    }
}

extension FetchFailure {
    /// A fetch whose deadline had passed before its transfer began (nothing was sent): the fetch loop's, and the
    /// media cache's for a lookup that comes too late to lead or wait.
    package static var deadlinePassedBeforeStart: FetchFailure {
        FetchFailure(.expired, "the deadline had passed before the transfer began")
    }
}
