import RichPush
import RichPushHTTP

/// `richpush serve`'s running parts: the service and its listeners, and the drain that ends them.
package final class ServiceHost: LifecycleService {
    package let service: EnrichmentService
    private let servers: LockedValue<[HTTPServer]>

    /// Where the service listens unless told: loopback, port 8080. Exposing the service is a decision, made
    /// explicitly (with a token: `serve` warns about a listener beyond loopback without one).
    package static let defaultAddresses = ["127.0.0.1:8080"]

    /// Listens on every address in `addresses`; throws when one cannot be listened on (none is kept).
    package init(
        enricher: Enricher, settings: EnrichmentService.Settings, limits: HTTPServer.Limits, addresses: [String],
        log: @escaping @Sendable ([UInt8]) -> Void
    ) throws(HTTPServerError) {
        service = EnrichmentService(enricher: enricher, settings: settings, log: log)
        var servers: [HTTPServer] = []
        for address in addresses {
            servers.append(try HTTPServer(listening: address, limits: limits, handler: service))
        }
        self.servers = LockedValue(servers)
    }

    /// The ports listened on, in the order of the addresses.
    package var ports: [Int] { servers.withLock { $0.map(\.port) } }

    /// Serves until the runner asks for a graceful shutdown (`ServiceRunner`: SIGTERM, SIGINT), then drains:
    /// `/readyz` turns 503 and new work is refused at once, the listeners close, and every request in flight gets
    /// its response (each payload by its own deadline); then it returns. When the runner cancels it first (its drain
    /// timeout passed: it shuts the engine down meanwhile, which ends what remains, and those results say so), the
    /// responses get `grace` to go out. What is still in progress then (a client that trickles its body, one that
    /// does not read its response) is cut off: the report names it, and the listeners stop, which closes every
    /// connection still open. The report goes to the service's log. Nothing polls: each wait is woken by the end of
    /// what it waits for.
    package func run() async throws {
        try? await gracefulShutdown()
        let started = ContinuousClock.now
        service.beginDraining()
        for server in servers.withLock({ $0 }) { server.quiesce() }
        var finished = await drained()
        if !finished {
            // The drain timeout: the engine is being shut down, and the responses it lets go get the grace. Waited
            // in a task of its own, as this one is cancelled.
            let graceEnds = ContinuousClock.now + Self.grace
            let host = self
            finished = await Task {
                await withTaskGroup(of: Bool.self) { group in
                    group.addTask { await host.drained() }
                    group.addTask {
                        try? await Task.sleep(until: graceEnds, clock: .continuous)
                        return false
                    }
                    let first = await group.next() ?? false
                    group.cancelAll()
                    return first
                }
            }.value
        }
        finish(DrainReport(cutOff: finished ? [] : service.requestsInProgress(), elapsed: .now - started))
    }

    /// Logs the drain's report and closes what is left.
    private func finish(_ report: DrainReport) {
        // Logged before the connections close, whose own access log lines follow (status 0, or the status of a
        // response cut short).
        service.log(report)
        // Stopping a server closes its connections. libmicrohttpd refuses to stop (it aborts the process) while a
        // connection is suspended: the streams are ended first, which resumes theirs; a request whose work still
        // runs keeps its own, and then the servers are left to the process's exit, which closes their sockets all
        // the same. `HTTPServer` itself never stops its daemon with a connection suspended (a body that came in as
        // it stopped, a resume on its way): it leaves the daemon then too.
        if service.endResponsesForClose() {
            Self.leftToExit.withLock { $0 += servers.withLock { $0 } }
        }
        servers.withLock { $0.removeAll() }
    }

    /// Whether the drain is done: every request admitted has ended its work, and no listener has a request in
    /// progress. Waits until it is, or until the calling task is cancelled (then false unless it is done).
    private func drained() async -> Bool {
        let servers = servers.withLock { $0 }
        while true {
            await service.untilIdle()
            for server in servers { await server.untilQuiet() }
            // A request may have come on a connection already open while another listener was waited on.
            if service.isIdle && servers.allSatisfy({ $0.requestsInProgress == 0 }) { return true }
            if Task.isCancelled { return false }
        }
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
}
