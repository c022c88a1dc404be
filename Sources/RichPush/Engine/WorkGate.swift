/// Admission to an engine's work, and what waits on it: payloads enter and leave; shutdown closes the gate (no
/// payload enters after) and waits until the ones inside have left. A small state machine under one lock, tested
/// without I/O (`WorkGateTests`); `Enricher` wraps its `enrich`, `explain` and the extension's runs in it.
final class WorkGate: Sendable {
    private struct State {
        var open = true
        var inside = 0
        var nextWaiter: UInt64 = 0
        /// Who waits until the gate is closed and nothing is inside.
        var idleWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        /// Who waits until the gate closes.
        var closeWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = LockedValue(State())

    /// Whether the gate still admits work.
    var isOpen: Bool { state.withLock { $0.open } }

    /// How much work is inside.
    var inside: Int { state.withLock { $0.inside } }

    /// How many wait in `untilClosed()` or `untilIdle()`.
    var waiting: Int { state.withLock { $0.closeWaiters.count + $0.idleWaiters.count } }

    /// Lets one piece of work in; false once the gate is closed (the caller then does nothing and says so).
    func enter() -> Bool {
        state.withLock { state in
            guard state.open else { return false }
            state.inside += 1
            return true
        }
    }

    /// One piece of work let in by `enter()` has finished.
    func leave() {
        let waiters: [CheckedContinuation<Void, Never>] = state.withLock { state in
            state.inside -= 1
            guard !state.open, state.inside == 0 else { return [] }
            defer { state.idleWaiters = [:] }
            return Array(state.idleWaiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Admits nothing more; returns whether this call closed it (false when it was closed already).
    @discardableResult
    func close() -> Bool {
        let (first, waiters, idle): (Bool, [CheckedContinuation<Void, Never>], [CheckedContinuation<Void, Never>]) =
            state.withLock { state in
                guard state.open else { return (false, [], []) }
                state.open = false
                defer {
                    state.closeWaiters = [:]
                    if state.inside == 0 { state.idleWaiters = [:] }
                }
                return (true, Array(state.closeWaiters.values), state.inside == 0 ? Array(state.idleWaiters.values) : [])
            }
        for waiter in waiters + idle { waiter.resume() }
        return first
    }

    /// Returns once the gate is closed and every piece of work let in has left, or once the calling task is
    /// cancelled, whichever comes first.
    func untilIdle() async {
        await wait(registering: { state, id, continuation in
            guard state.open || state.inside > 0 else { return false }
            state.idleWaiters[id] = continuation
            return true
        }, removing: { state, id in state.idleWaiters.removeValue(forKey: id) })
    }

    /// Returns once the gate is closed, or once the calling task is cancelled, whichever comes first.
    func untilClosed() async {
        await wait(registering: { state, id, continuation in
            guard state.open else { return false }
            state.closeWaiters[id] = continuation
            return true
        }, removing: { state, id in state.closeWaiters.removeValue(forKey: id) })
    }

    /// Parks the calling task until `register`'s condition is resumed, unless it already holds (`register` returns
    /// false) or the task is, or becomes, cancelled. Each continuation is resumed exactly once: by whoever takes it
    /// out of the state under the lock.
    private func wait(
        registering register: (inout State, UInt64, CheckedContinuation<Void, Never>) -> Bool,
        removing remove: @escaping @Sendable (inout State, UInt64) -> CheckedContinuation<Void, Never>?
    ) async {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let parked = state.withLock { state in
                    // Checked under the lock: a cancellation after this finds the continuation and resumes it.
                    !Task.isCancelled && register(&state, id, continuation)
                }
                if !parked { continuation.resume() }
            }
        } onCancel: {
            state.withLock { remove(&$0, id) }?.resume()
        }
    }
}
