import RichPushCore

/// Tells a conversion to stop (its payload's deadline came, or the engine is shutting down). The converter
/// registers what stops its computation while one runs; a signal before or during the registration still stops it.
public final class StopSignal: Sendable {
    private struct State {
        var stopped = false
        var action: (@Sendable () -> Void)?
    }

    private let state = LockedValue(State())

    public init() {}

    /// Whether `stop()` was called.
    public var isStopped: Bool { state.withLock { $0.stopped } }

    /// Runs `action` when `stop()` is called while `body` runs (at once if it was called before); `action` may run
    /// on another thread, concurrently with `body`, and never after `whileRegistered` returns.
    public func whileRegistered<Result>(
        _ action: @escaping @Sendable () -> Void, _ body: () throws(TransformFailure) -> Result
    ) throws(TransformFailure) -> Result {
        let stopped = state.withLock { state in
            state.action = action
            return state.stopped
        }
        if stopped { action() }
        defer { state.withLock { $0.action = nil } }
        return try body()
    }

    /// Stops the conversion under way, if any, and any later one.
    public func stop() {
        // The action runs under the lock, so that `whileRegistered` cannot return (and its converter free what
        // the action touches) while it runs.
        state.withLock { state in
            state.stopped = true
            state.action?()
        }
    }
}
