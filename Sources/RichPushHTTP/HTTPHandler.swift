import RichPushCore

/// What the server asks of the code behind it.
package protocol HTTPHandler: Sendable {
    /// Called on the server's thread when a request's headers are in: answer at once (the body is not read),
    /// or have the body read first. Must not block.
    func head(_ request: HTTPRequest) -> HTTPHead
    /// Called with the request and its whole body; the server's thread is not held meanwhile (the connection is
    /// suspended, and resumed when the response is ready).
    func respond(to request: HTTPRequest) async -> HTTPResponse
    /// Called on the server's thread when a request whose head came in is over: its response sent (`status` and
    /// `log` are the response's; `status` is libmicrohttpd's own when it answered a body it refused itself), or the
    /// connection lost first (status 0 when no response was queued); `log.incomplete` says how it ended otherwise
    /// than with a response sent whole. Also for a request the server refused itself, before `head` (a malformed
    /// head, or one over a limit: 400, 414, 431, 501), so that every request reaches the access log; and for one
    /// whose body was refused or lost after `head` answered `.read` (413, 503 when bodies fill the memory bound,
    /// status 0), where `respond(to:)` is never called.
    func completed(_ request: HTTPRequest, status: Int, log: HTTPResponse.Log, elapsed: Duration)
}

/// What to do with a request whose headers are in.
package enum HTTPHead: Sendable {
    /// Answer now; the body, if any, is not read (the connection is then closed after the response).
    case respond(HTTPResponse)
    /// Read the body, at most `limit` bytes, then call `respond(to:)`; a longer body gets `tooLarge`. `context` is
    /// what the handler decided from the head and wants back in `respond(to:)` (as the request's `context`), so
    /// that it need not find or work it out again there.
    case read(limit: Int, tooLarge: HTTPResponse, context: (any Sendable)? = nil)
}
