import RichPush
import RichPushHTTP

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
    /// within `grace`. What is still in progress then (a client that trickles its body, one that does not read its
    /// response) is cut off: the report names it, and the listeners stop, which closes every connection still
    /// open. The report goes to the service's log. The drain takes at most `timeout` plus `grace` (plus the
    /// engine's shutdown, which cancels at once).
    @discardableResult
    package func drain(timeout: Duration) async -> DrainReport {
        let started = ContinuousClock.now
        service.beginDraining()
        for server in servers.withLock({ $0 }) { server.quiesce() }
        var finished = await waitForRequests(until: started + timeout)
        if !finished {
            // The drain's time is up: no second drain inside the engine, what remains is cancelled now.
            await enricher.shutdown(drainDeadline: .now)
            finished = await waitForRequests(until: .now + Self.grace)
        }
        let report = DrainReport(cutOff: finished ? [] : service.requestsInProgress(), elapsed: .now - started)
        // Logged before the connections close, whose own access log lines follow (status 0, or the status of a
        // response cut short).
        service.log(report)
        // Stopping a server closes its connections. libmicrohttpd refuses to stop (it aborts the process) while a
        // connection is suspended: the streams are ended first, which resumes theirs; a request whose work still
        // runs keeps its own, and then the servers are left to the process's exit, which closes their sockets all
        // the same.
        if service.endResponsesForClose() {
            Self.leftToExit.withLock { $0 += servers.withLock { $0 } }
        }
        servers.withLock { $0.removeAll() }
        return report
    }

    /// What a drain came to.
    package struct DrainReport: Sendable {
        /// The requests still in progress when it ended, whose connections it closed.
        package var cutOff: [EnrichmentService.RequestInProgress]
        /// How long it took.
        package var elapsed: Duration
    }

    /// How long responses may take to go out once the engine has ended their work: 2 s, far more than a response
    /// that is ready takes to a client that reads, and short against a stop's budget (systemd's
    /// `TimeoutStopSec`, Kubernetes' grace period).
    package static let grace = Duration.seconds(2)

    /// Servers a drain could not stop; kept, never stopped, until the process exits.
    private static let leftToExit = LockedValue<[HTTPServer]>([])

    /// How often the drain looks at the requests in progress: 10 ms adds at most that to an exit, and costs
    /// nothing measurable while it waits.
    private static let pollInterval = Duration.milliseconds(10)

    /// Waits until no request is in progress (the service's and the servers' counts) and no work runs; false
    /// when `deadline` passes first.
    private func waitForRequests(until deadline: ContinuousClock.Instant) async -> Bool {
        while true {
            let busy = !service.isIdle || servers.withLock { $0.contains { $0.requestsInProgress > 0 } }
            if !busy { return true }
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: Self.pollInterval)
        }
    }
}
