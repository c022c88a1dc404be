/// Admission to work, and what waits on it: work enters while the gate is open and, when it has a limit, while
/// there is room; it leaves when done; closing the gate (a drain) admits nothing more, and the drain waits until
/// the work inside has left. A small state machine under one lock, tested without I/O (`WorkGateTests`).
///
/// The one admission mechanism of the program: `Enricher` wraps its `enrich`, `explain` and the extension's runs in
/// one without a limit; `serve` admits its requests through one of `--max-in-flight` slots (refusing with 503 when
/// it is full or closed), and `worker` its entries through one of `--concurrency` slots: its state machine holds the
/// gate's `Slots` (the counting, without the waiting) under its own lock.
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

    /// The gate's counting, a value without I/O or waiting: open or closed, the work inside, the limit. A state
    /// machine that admits work under its own lock (the worker's) holds one; `WorkGate` holds one with its waiters.
    package struct Slots: Sendable, Equatable {
        package private(set) var open = true
        package private(set) var inside = 0
        /// The most work inside at once; nil for no limit.
        package let limit: Int?

        package init(limit: Int?) {
            precondition(limit.map { $0 > 0 } ?? true, "a gate's limit is at least 1")
            self.limit = limit
        }

        /// Lets `count` pieces of work in, all or none (see `WorkGate.admit`).
        package mutating func admit(_ count: Int) -> Admission {
            guard open else { return .closed }
            if let limit, inside + count > limit { return .full }
            inside += count
            return .admitted
        }

        /// Counts `count` pieces of work taken before the gate could refuse them (see `WorkGate.enter(taken:)`).
        package mutating func enter(taken count: Int) { inside += count }

        /// The room left now: 0 when closed or full; `Int.max` without a limit.
        package var room: Int {
            guard open else { return 0 }
            return limit.map { max(0, $0 - inside) } ?? Int.max
        }

        /// Whether every slot is taken (never without a limit).
        package var isFull: Bool { limit.map { inside >= $0 } ?? false }

        /// `count` pieces of work have finished.
        package mutating func leave(_ count: Int) {
            precondition(inside >= count, "work left a gate it had not entered")
            inside -= count
        }

        /// Admits nothing more; whether this call closed it.
        package mutating func close() -> Bool {
            defer { open = false }
            return open
        }
    }

    private struct State {
        var slots: Slots
        var nextWaiter: UInt64 = 0
        /// Who waits until the gate is closed and nothing is inside.
        var idleWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        /// Who waits until the gate closes.
        var closeWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        /// Who waits until nothing is inside, open or closed.
        var emptyWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    private let state: LockedValue<State>
    /// The most work inside at once; nil for no limit.
    package let limit: Int?

    /// A gate that admits at most `limit` pieces of work at once (nil: any number).
    package init(limit: Int? = nil) {
        state = LockedValue(State(slots: Slots(limit: limit)))
        self.limit = limit
    }

    /// Whether the gate still admits work.
    package var isOpen: Bool { state.withLock { $0.slots.open } }

    /// How much work is inside.
    package var inside: Int { state.withLock { $0.slots.inside } }

    /// How many wait in `untilClosed()` or `untilIdle()`.
    package var waiting: Int { state.withLock { $0.closeWaiters.count + $0.idleWaiters.count } }

    /// Lets `count` pieces of work in, all or none: `.full` when they do not fit in the room left, `.closed` once
    /// the gate is closed (the caller then does nothing and says so).
    package func admit(_ count: Int = 1) -> Admission {
        state.withLock { $0.slots.admit(count) }
    }

    /// Lets one piece of work in; false when it was not admitted.
    package func enter() -> Bool { admit() == .admitted }

    /// Counts `count` pieces of work taken before the gate could refuse them (entries a read brought while the
    /// gate closed): they enter even when it is closed, and leave as any other. The caller took no more than the
    /// room it saw, so the limit holds.
    package func enter(taken count: Int) {
        state.withLock { $0.slots.enter(taken: count) }
    }

    /// The room left now: 0 when closed or full; `Int.max` without a limit.
    package var room: Int { state.withLock { $0.slots.room } }

    /// `count` pieces of work let in by `admit` have finished.
    package func leave(_ count: Int = 1) {
        let waiters: [CheckedContinuation<Void, Never>] = state.update(wakingIf: { state in
            // A thread waits for room only when there was none.
            let wasFull = state.slots.isFull
            state.slots.leave(count)
            guard state.slots.inside == 0 else { return ([], wasFull) }
            let open = state.slots.open
            defer {
                state.emptyWaiters = [:]
                if !open { state.idleWaiters = [:] }
            }
            return (Array(state.emptyWaiters.values) + (open ? [] : Array(state.idleWaiters.values)), wasFull)
        })
        for waiter in waiters { waiter.resume() }
    }

    /// Admits nothing more; returns whether this call closed it (false when it was closed already).
    @discardableResult
    package func close() -> Bool {
        let (first, waiters, idle): (Bool, [CheckedContinuation<Void, Never>], [CheckedContinuation<Void, Never>]) =
            state.update { state in
                guard state.slots.close() else { return (false, [], []) }
                let empty = state.slots.inside == 0
                defer {
                    state.closeWaiters = [:]
                    if empty { state.idleWaiters = [:] }
                }
                return (true, Array(state.closeWaiters.values), empty ? Array(state.idleWaiters.values) : [])
            }
        for waiter in waiters + idle { waiter.resume() }
        return first
    }

    /// Blocks the calling thread, one of the program's own (never a task of the cooperative pool), until there is
    /// room, the gate closes, or `timeout` passes: the room then (0 when closed or still full). Without a limit,
    /// `Int.max` while open.
    package func waitForRoom(timeout: Duration) -> Int {
        let room = state.wait(timeout: timeout) { state -> Int? in
            guard state.slots.open else { return 0 }
            return state.slots.isFull ? nil : state.slots.room
        }
        return room ?? 0
    }

    /// Returns once the gate is closed and every piece of work let in has left, or once the calling task is
    /// cancelled, whichever comes first.
    package func untilIdle() async {
        await wait(in: \.idleWaiters) { $0.slots.open || $0.slots.inside > 0 }
    }

    /// Returns once nothing is inside (at once if nothing is), open or closed, or once the calling task is
    /// cancelled, whichever comes first.
    package func untilEmpty() async {
        await wait(in: \.emptyWaiters) { $0.slots.inside > 0 }
    }

    /// Returns once the gate is closed, or once the calling task is cancelled, whichever comes first.
    package func untilClosed() async {
        await wait(in: \.closeWaiters) { $0.slots.open }
    }

    /// Parks the calling task in `waiters` while `waiting` holds, until whoever changes the state resumes it; at
    /// once when `waiting` does not hold, or the task is, or becomes, cancelled. Each continuation is resumed exactly
    /// once: by whoever takes it out of the state under the lock.
    private func wait(
        in waiters: WritableKeyPath<State, [UInt64: CheckedContinuation<Void, Never>]> & Sendable,
        while waiting: (State) -> Bool
    ) async {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let parked = state.withLock { state in
                    // Checked under the lock: a cancellation after this finds the continuation and resumes it.
                    guard !Task.isCancelled, waiting(state) else { return false }
                    state[keyPath: waiters][id] = continuation
                    return true
                }
                if !parked { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0[keyPath: waiters].removeValue(forKey: id) }?.resume()
        }
    }
}
