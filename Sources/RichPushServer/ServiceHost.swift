import RichPush

/// `richpush serve`'s running parts: the service and its listeners, and the drain that ends them.
package final class ServiceHost: Sendable {
    package let service: EnrichmentService
    private let servers: LockedValue<[HTTPServer]>
    private let enricher: Enricher

    /// Listens on every address in `addresses`; throws when one cannot be listened on (none is kept).
    package init(
        enricher: Enricher, settings: EnrichmentService.Settings, limits: HTTPServer.Limits, addresses: [String],
        log: @escaping @Sendable ([UInt8]) -> Void
    ) throws(HTTPServerError) {
        self.enricher = enricher
        service = EnrichmentService(enricher: enricher, settings: settings, log: log)
        var servers: [HTTPServer] = []
        for address in addresses {
            servers.append(try HTTPServer(listening: address, limits: limits, handler: service))
        }
        self.servers = LockedValue(servers)
    }

    /// The ports listened on, in the order of the addresses.
    package var ports: [Int] { servers.withLock { $0.map(\.port) } }

    /// Drains: `/readyz` turns 503 and new work is refused at once, the listeners close, and every request in
    /// flight gets its response (each payload by its own deadline). When `timeout` passes first, the engine is
    /// shut down, which ends what remains (results say `cancelled` or `expired`), and their responses are sent
    /// within a grace second. Then the listeners stop, closing idle connections.
    /// - Returns: whether every request got its response.
    @discardableResult
    package func drain(timeout: Duration) async -> Bool {
        service.beginDraining()
        for server in servers.withLock({ $0 }) { server.quiesce() }
        var finished = await waitForRequests(until: .now + timeout)
        if !finished {
            // The drain's time is up: no second drain inside the engine, what remains is cancelled now.
            await enricher.shutdown(drainDeadline: .now)
            finished = await waitForRequests(until: .now + Self.grace)
        }
        // A server still holding a request keeps its (suspended) connection: stopping it then is not allowed by
        // libmicrohttpd, so it is left to the process's exit.
        if finished { servers.withLock { $0.removeAll() } }
        return finished
    }

    /// How long responses may take to go out once the engine has ended their work.
    static let grace = Duration.seconds(2)

    /// How often the drain looks at the requests in progress: 10 ms adds at most that to an exit, and costs
    /// nothing measurable while it waits.
    private static let pollInterval = Duration.milliseconds(10)

    private func waitForRequests(until deadline: ContinuousClock.Instant) async -> Bool {
        while true {
            let busy = servers.withLock { $0.contains { $0.requestsInProgress > 0 } }
            if !busy { return true }
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: Self.pollInterval)
        }
    }
}
