import RichPush
import RichPushHTTP

/// The worker's counters: the service's payload metrics plus the queue's.
package final class WorkerMetrics: Sendable {
    package struct Counts: Sendable {
        /// Entries taken (read or claimed).
        package var read = 0
        /// Entries claimed from idle consumers.
        package var claimed = 0
        /// Entries pending for this consumer that it had not received, taken (`ConsumerGroup.recoverUnseen`).
        package var recovered = 0
        /// Results written with their acknowledgement.
        package var written = 0
        /// Entries sent to the dead-letter stream.
        package var deadLettered = 0
        /// Results dropped because another consumer had claimed the entry meanwhile (`dropped`).
        package var lost = 0
        /// Redis commands that failed on the connection.
        package var redisErrors = 0
    }

    package let service = ServiceMetrics()
    private let counts = LockedValue(Counts())

    package func count(_ counter: WritableKeyPath<Counts, Int>, by amount: Int = 1) {
        counts.withLock { $0[keyPath: counter] += amount }
    }

    package var snapshot: Counts { counts.withLock { $0 } }

    /// The exposition: payload metrics and the queue's counters.
    package func render(engine: EngineStatistics, inFlight: Int, draining: Bool) -> [UInt8] {
        let counts = snapshot
        var text = "# HELP richpush_worker_entries_total Entries taken (read or claimed), by what became of them.\n"
        text += "# TYPE richpush_worker_entries_total counter\n"
        for (result, value) in [
            ("written", counts.written), ("dead-lettered", counts.deadLettered), ("dropped", counts.lost),
        ] {
            text += "richpush_worker_entries_total{result=\"\(result)\"} \(value)\n"
        }
        for (name, help, value) in [
            ("richpush_worker_entries_read_total", "Entries taken from the stream (read or claimed).", counts.read),
            ("richpush_worker_claimed_total", "Entries claimed from idle consumers.", counts.claimed),
            (
                "richpush_worker_recovered_total",
                "Entries pending for this consumer that it had not received (a read whose reply was lost), taken.",
                counts.recovered
            ),
            (
                "richpush_worker_redis_reconnects_total",
                "Redis commands that failed on the connection (each is followed by a reconnection).", counts.redisErrors
            ),
        ] {
            text += "# HELP \(name) \(help)\n# TYPE \(name) counter\n\(name) \(value)\n"
        }
        return service.render(engine: engine, inFlight: inFlight, draining: draining) + Array(text.utf8)
    }
}

/// `--metrics-listen`: `/healthz`, `/readyz` (200 while Redis answers and writes succeed, until a drain; see
/// `StreamWorker.isReady`) and `/metrics` for a worker.
package final class WorkerHealth: HTTPHandler {
    private let worker: StreamWorker
    private let enricher: Enricher

    package init(worker: StreamWorker, enricher: Enricher) {
        self.worker = worker
        self.enricher = enricher
    }

    package func head(_ request: HTTPRequest) -> HTTPHead {
        let ready = worker.isReady
        return .respond(
            HealthRoutes.answer(request, ready: ready, notReady: "not ready") {
                worker.metrics.render(engine: enricher.statistics, inFlight: worker.inFlight, draining: !ready)
            } ?? .error(404, .notFound, "no such route: \(request.path)"))
    }

    package func respond(to request: HTTPRequest) async -> HTTPResponse { .error(404, .notFound, "no such route") }

    package func completed(_ request: HTTPRequest, status: Int, log: HTTPResponse.Log, elapsed: Duration) {}
}
