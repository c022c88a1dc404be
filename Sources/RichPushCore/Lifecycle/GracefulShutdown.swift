/// Runs `operation`; `handler` runs once if the runner asks the calling task's service to shut down gracefully
/// while `operation` runs (at once, before `operation`, if it has asked already). Outside a runner it never runs.
/// The shape of swift-service-lifecycle's function of the same name (package-level here, so that an application
/// importing both sees only that one).
package func withGracefulShutdownHandler<Result, Failure: Error>(
    operation: () async throws(Failure) -> Result, onGracefulShutdown handler: @escaping @Sendable () -> Void
) async throws(Failure) -> Result {
    guard let shutdown = GracefulShutdown.current, let id = shutdown.register(handler) else {
        return try await operation()
    }
    defer { shutdown.remove(id) }
    return try await operation()
}

/// Returns once the runner asks the calling task's service to shut down gracefully; throws `CancellationError`
/// when the task is cancelled first. Outside a runner, only cancellation ends it.
package func gracefulShutdown() async throws {
    if let shutdown = GracefulShutdown.current {
        try await shutdown.wait()
    } else {
        // No runner: nothing but cancellation can come.
        await WorkGate().untilClosed()
        throw CancellationError()
    }
}

/// A runner's request to one of its services to shut down gracefully: stop taking work, finish what it has, then
/// return from `run()`. Distinct from cancellation, which asks the service to stop now. `ServiceRunner` gives each
/// service's task one (`current`, a task-local), as swift-service-lifecycle's `ServiceGroup` does; a service reads
/// it through `withGracefulShutdownHandler(operation:onGracefulShutdown:)` and `gracefulShutdown()`.
package final class GracefulShutdown: Sendable {
    /// The request of the service running in this task, if a runner runs it.
    @TaskLocal package static var current: GracefulShutdown?

    private struct Handlers {
        var requested = false
        var next: UInt64 = 0
        var waiting: [UInt64: @Sendable () -> Void] = [:]
    }

    private let handlers = LockedValue(Handlers())
    /// Closed at the request: its waits are the ones `gracefulShutdown()` needs (resumed once, or at cancellation).
    private let request = WorkGate()

    package init() {}

    /// Asks for the graceful shutdown: every handler registered runs now, once, on the calling thread. Later calls
    /// do nothing.
    package func trigger() {
        let waiting = handlers.withLock { handlers -> [@Sendable () -> Void]? in
            guard !handlers.requested else { return nil }
            handlers.requested = true
            defer { handlers.waiting = [:] }
            return Array(handlers.waiting.values)
        }
        guard let waiting else { return }
        request.close()
        for handler in waiting { handler() }
    }

    /// Keeps `handler` until `remove`, or runs it at once (and keeps nothing: nil) when the request has come.
    fileprivate func register(_ handler: @escaping @Sendable () -> Void) -> UInt64? {
        let id = handlers.withLock { handlers -> UInt64? in
            guard !handlers.requested else { return nil }
            handlers.next += 1
            handlers.waiting[handlers.next] = handler
            return handlers.next
        }
        if id == nil { handler() }
        return id
    }

    fileprivate func remove(_ id: UInt64) {
        _ = handlers.withLock { $0.waiting.removeValue(forKey: id) }
    }

    /// Returns once the request comes; throws `CancellationError` when the calling task is cancelled first.
    fileprivate func wait() async throws {
        await request.untilClosed()
        if request.isOpen { throw CancellationError() }
    }
}
