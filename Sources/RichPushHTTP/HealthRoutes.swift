/// `/healthz`, `/readyz` and `/metrics`, answered alike by the service and by the worker's metrics listener.
package enum HealthRoutes {
    /// The answer to `request` when its path is one of the three, else nil: `/healthz` 200 while the process
    /// lives, `/readyz` 200 when `ready` (else 503 saying `notReady`), `/metrics` what `metrics` renders (in
    /// Prometheus's text format), each for GET and HEAD only.
    package static func answer(
        _ request: HTTPRequest, ready: Bool, notReady: String, metrics: () -> [UInt8]
    ) -> HTTPResponse? {
        switch request.path {
        case "/healthz", "/readyz", "/metrics": break
        // Every request passes here first: a switch, where an array literal was allocated for each.
        default: return nil
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            return .error(
                405, .methodNotAllowed, "\(request.method) is not allowed here", headers: [("Allow", "GET, HEAD")])
        }
        switch request.path {
        case "/healthz": return healthy
        case "/readyz": return ready ? isReady : text(503, notReady)
        default:
            return Self.metrics(metrics())
        }
    }

    /// `/metrics`' answer of `text` (Prometheus's text format).
    package static func metrics(_ text: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4")], body: .bytes(text))
    }

    /// `/healthz`'s and `/readyz`'s answers, made once (libmicrohttpd's response too): probes ask for them all the
    /// time.
    private static let healthy = text(200, "ok").prepared()
    private static let isReady = text(200, "ready").prepared()

    private static func text(_ status: Int, _ line: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "text/plain")], body: .bytes(Array((line + "\n").utf8)))
    }
}
