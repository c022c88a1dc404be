/// Admission to work, and what waits on it: work enters while the gate is open and, when it has a limit, while
/// there is room; it leaves when done; closing the gate (a drain) admits nothing more, and the drain waits until
/// the work inside has left. A small state machine under one lock, tested without I/O (`WorkGateTests`).
///
/// The one admission mechanism of the program: `Enricher` wraps its `enrich`, `explain` and the extension's runs in
/// one without a limit; `serve` admits its requests through one of `--max-in-flight` slots (refusing with 503 when
/// it is full or closed), and `worker` its entries through one of `--concurrency` slots, which its reader thread
/// waits on for room.
package final class WorkGate: Sendable {
    /// What `admit` answers.
    package enum Admission: Sendable, Equatable {
        /// The work is in: it calls `leave` when done.
        case admitted
        /// Every slot is taken (only with a limit).
        case full
        /// The gate is closed: nothing more enters.
        case closed
    }

    private struct State {
        var open = true
        var inside = 0
        var nextWaiter: UInt64 = 0
        /// Who waits until the gate is closed and nothing is inside.
        var idleWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        /// Who waits until the gate closes.
        var closeWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        /// Who waits until nothing is inside, open or closed.
        var emptyWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = LockedValue(State())
    /// The most work inside at once; nil for no limit.
    package let limit: Int?

    /// A gate that admits at most `limit` pieces of work at once (nil: any number).
    package init(limit: Int? = nil) {
        precondition(limit.map { $0 > 0 } ?? true, "a gate's limit is at least 1")
        self.limit = limit
    }

    /// Whether the gate still admits work.
    package var isOpen: Bool { state.withLock { $0.open } }

    /// How much work is inside.
    package var inside: Int { state.withLock { $0.inside } }

    /// How many wait in `untilClosed()` or `untilIdle()`.
    package var waiting: Int { state.withLock { $0.closeWaiters.count + $0.idleWaiters.count } }

    /// Lets `count` pieces of work in, all or none: `.full` when they do not fit in the room left, `.closed` once
    /// the gate is closed (the caller then does nothing and says so).
    package func admit(_ count: Int = 1) -> Admission {
        state.withLock { state in
            guard state.open else { return .closed }
            if let limit, state.inside + count > limit { return .full }
            state.inside += count
            return .admitted
        }
    }

    /// Lets one piece of work in; false when it was not admitted.
    package func enter() -> Bool { admit() == .admitted }

    /// Counts `count` pieces of work taken before the gate could refuse them (entries a read brought while the
    /// gate closed): they enter even when it is closed, and leave as any other. The caller took no more than the
    /// room it saw, so the limit holds.
    package func enter(taken count: Int) {
        state.withLock { $0.inside += count }
    }

    /// The room left now: 0 when closed or full; `Int.max` without a limit.
    package var room: Int {
        state.withLock { state in
            guard state.open else { return 0 }
            return limit.map { max(0, $0 - state.inside) } ?? Int.max
        }
    }

    /// `count` pieces of work let in by `admit` have finished.
    package func leave(_ count: Int = 1) {
        let waiters: [CheckedContinuation<Void, Never>] = state.update(wakingIf: { state in
            precondition(state.inside >= count, "work left a gate it had not entered")
            // A thread waits for room only when there was none.
            let wasFull = limit.map { state.inside >= $0 } ?? false
            state.inside -= count
            guard state.inside == 0 else { return ([], wasFull) }
            defer {
                state.emptyWaiters = [:]
                if !state.open { state.idleWaiters = [:] }
            }
            return (Array(state.emptyWaiters.values) + (state.open ? [] : Array(state.idleWaiters.values)), wasFull)
        })
        for waiter in waiters { waiter.resume() }
    }

    /// Admits nothing more; returns whether this call closed it (false when it was closed already).
    @discardableResult
    package func close() -> Bool {
        let (first, waiters, idle): (Bool, [CheckedContinuation<Void, Never>], [CheckedContinuation<Void, Never>]) =
            state.update { state in
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

    /// Blocks the calling thread, one of the program's own (never a task of the cooperative pool), until there is
    /// room, the gate closes, or `timeout` passes: the room then (0 when closed or still full). Without a limit,
    /// `Int.max` while open.
    package func waitForRoom(timeout: Duration) -> Int {
        let room = state.wait(timeout: timeout) { state -> Int? in
            guard state.open else { return 0 }
            guard let limit else { return Int.max }
            return state.inside < limit ? limit - state.inside : nil
        }
        return room ?? 0
    }

    /// Returns once the gate is closed and every piece of work let in has left, or once the calling task is
    /// cancelled, whichever comes first.
    package func untilIdle() async {
        await wait(registering: { state, id, continuation in
            guard state.open || state.inside > 0 else { return false }
            state.idleWaiters[id] = continuation
            return true
        }, removing: { state, id in state.idleWaiters.removeValue(forKey: id) })
    }

    /// Returns once nothing is inside (at once if nothing is), open or closed, or once the calling task is
    /// cancelled, whichever comes first.
    package func untilEmpty() async {
        await wait(registering: { state, id, continuation in
            guard state.inside > 0 else { return false }
            state.emptyWaiters[id] = continuation
            return true
        }, removing: { state, id in state.emptyWaiters.removeValue(forKey: id) })
    }

    /// Returns once the gate is closed, or once the calling task is cancelled, whichever comes first.
    package func untilClosed() async {
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
