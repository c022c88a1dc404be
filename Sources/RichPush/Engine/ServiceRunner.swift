/// Runs a program's services as one, over one engine, in the shape of swift-service-lifecycle's `ServiceGroup`:
/// the one lifecycle of `serve`, `worker` and `stream`.
///
/// Each service's `run()` runs in a task of its own. SIGTERM or SIGINT (or `shutdownGracefully()`, or a service
/// that returns or throws) starts the graceful shutdown: the services are asked to stop taking work and finish what
/// they have (`GracefulShutdown`), the last listed first, each of the others once every one after it has returned
/// (so a health listener listed before the work it reports on answers until that work is done). The drain policy,
/// the same in every mode: `drainTimeout` after that start, the services still running are cancelled (each then
/// ends at once, in its own documented way) and the engine is shut down, which ends the payloads still in flight
/// (outcome `cancelled`); once every service has returned, `run` ends with `enricher.shutdown(drainDeadline:)`
/// with that same deadline (nil: no timeout; each payload ends by its own deadline). Nothing polls: every wait is
/// woken by the event it waits for.
package final class ServiceRunner: Sendable {
    /// How long the services may drain after the graceful shutdown starts; nil for no bound.
    package let drainTimeout: Duration?

    /// The drain timeout of every mode (`stream`, `serve`, `worker`) unless told otherwise: 30 s, longer than the
    /// 25 s default deadline, so that every payload in flight ends by its own deadline before the drain is cut.
    package static let defaultDrainTimeout: Duration = .seconds(30)
    private let requests: AsyncStream<Void>
    private let requester: AsyncStream<Void>.Continuation
    private let signals: TerminationSignals?

    /// A runner with this drain timeout. With `handlingSignals`, SIGTERM and SIGINT are taken over from now (not
    /// from `run`): a signal that comes before `run` starts the graceful shutdown as soon as it does, rather than
    /// ending the process.
    package init(drainTimeout: Duration?, handlingSignals: Bool = true) {
        self.drainTimeout = drainTimeout
        (requests, requester) = AsyncStream<Void>.makeStream()
        let requester = requester
        signals = handlingSignals ? TerminationSignals { requester.yield() } : nil
    }

    /// Starts the graceful shutdown, as a signal does (before `run`: as soon as it starts).
    package func shutdownGracefully() {
        requester.yield()
    }

    private enum Event: Sendable {
        case ended(Int, (any Error)?)
        case requested
        case drainTimedOut
        case nothing
    }

    /// Runs `services` until every one has returned, then shuts `enricher` down (see the type's summary). Throws
    /// the first error a service threw (not counting the cancellations of the drain timeout), once everything has
    /// stopped.
    package func run(_ services: [any LifecycleService], enricher: Enricher) async throws {
        let shutdowns = services.map { _ in GracefulShutdown() }
        var failure: (any Error)? = nil
        var drainDeadline: ContinuousClock.Instant? = nil
        await withTaskGroup(of: Event.self) { group in
            for (index, service) in services.enumerated() {
                group.addTask {
                    do {
                        try await GracefulShutdown.$current.withValue(shutdowns[index]) { try await service.run() }
                        return .ended(index, nil)
                    } catch {
                        return .ended(index, error)
                    }
                }
            }
            let requests = requests
            group.addTask {
                // Ends with nothing when the group is cancelled at the end.
                for await _ in requests { return .requested }
                return .nothing
            }
            var running = Set(services.indices)
            var shuttingDown = false
            var timedOut = false
            while !running.isEmpty, let event = await group.next() {
                switch event {
                case .ended(let index, let error):
                    running.remove(index)
                    if failure == nil, let error, !(timedOut && error is CancellationError) { failure = error }
                case .requested:
                    break
                case .drainTimedOut:
                    // Cancelled first, then the engine: a service that must not act on a cancelled payload (the
                    // worker writes no `cancelled` result) has stopped acting when the payloads end.
                    timedOut = true
                    group.cancelAll()
                    let deadline = drainDeadline
                    group.addTask {
                        await enricher.shutdown(drainDeadline: deadline)
                        return .nothing
                    }
                    continue
                case .nothing:
                    continue
                }
                if !shuttingDown {
                    shuttingDown = true
                    if let drainTimeout {
                        let deadline = ContinuousClock.now + drainTimeout
                        drainDeadline = deadline
                        group.addTask {
                            // Cancelled when everything has returned first: then its event is never read.
                            try? await Task.sleep(until: deadline, clock: .continuous)
                            return .drainTimedOut
                        }
                    }
                }
                // The last service still running is asked; the ones before it once it has returned.
                if !timedOut, let last = running.max() { shutdowns[last].trigger() }
            }
            group.cancelAll()
        }
        await enricher.shutdown(drainDeadline: drainDeadline)
        if let failure { throw failure }
    }
}
