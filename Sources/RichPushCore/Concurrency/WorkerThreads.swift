#if canImport(Glibc)
    import Glibc
#endif

/// A fixed number of named threads of our own that take work items first come, first served, as swift-nio's
/// `NIOThreadPool`: for blocking work (libmagic, hashing, image conversion, making directories) that must run neither
/// on the cooperative pool nor on the fetch loop's thread. (Threads of our own, not Dispatch's shared pool: it is as
/// wide as the machine has cores, and work queued behind other users of it waited seconds in the loaded test suite.)
///
/// Every work item is called exactly once, with its `Turn`: on one of the threads to run; or `withdrawn`, on the
/// withdrawing thread, when `withdraw(_:)` took it out of the queue before a thread did; or `dropped` when the
/// threads were shut down before it started (refused on submission after a shutdown, or queued at a `.refuse`
/// shutdown). The threads start at the first submission, so that a service never asked for work costs no thread.
///
/// An item submitted with a stop action (`submit(stop:_:)`) is told to stop by a `.refuse` shutdown while it runs:
/// the pool knows which items run, so that its user keeps no list of its own (a conversion under way ends at the
/// engine's shutdown, not when it completes).
package final class WorkerThreads: Sendable {
    /// How a work item is called.
    package enum Turn: Equatable, Sendable {
        /// On the thread numbered `thread` (0 ..< `count`): do the work.
        case run(thread: Int)
        /// Taken out of the queue by `withdraw(_:)` before it started; called on the withdrawing thread.
        case withdrawn
        /// The threads were shut down before it started; called on the thread that submitted it or shut them down.
        case dropped
    }

    /// A work item.
    package typealias Work = @Sendable (Turn) -> Void

    /// What tells a running work item to stop (as `StopSignal.stop` does a conversion).
    package typealias Stop = @Sendable () -> Void

    /// A queued work item, to withdraw it by.
    package struct Ticket: Hashable, Sendable {
        fileprivate let id: UInt64
    }

    /// What a shutdown does with the work still queued.
    package enum Shutdown: Sendable {
        /// It runs, and the threads end once the queue is empty.
        case drain
        /// It is dropped (each item called `dropped` at once); each item running that was submitted with a stop
        /// action has it called, and goes on to its end.
        case refuse
    }

    private struct State {
        var queue = WorkQueue()
        /// Work items running now.
        var running = 0
        /// The stop actions of the items running now, by their ids: set as a thread takes an item from the queue,
        /// under the same lock as the shutdown that empties the queue, so that no item is in neither.
        var stops: [UInt64: Stop] = [:]
        var started = false
        var shutDown = false
        /// Threads started and not yet ended.
        var alive = 0
    }

    /// The threads' name (each thread is `<name>-<number>`, cut to Linux's 15 bytes).
    package let name: String
    /// How many threads there are.
    package let count: Int
    private let state = LockedValue(State())

    /// `count` threads named after `name`, started at the first submission.
    package init(name: String, count: Int = 1) {
        precondition(count > 0, "a pool of no threads would never run its work")
        self.name = name
        self.count = count
    }

    /// Queues `work` for the next free thread. Returns its ticket, or nil when the threads were shut down: `work`
    /// was then called `dropped` before this returned. A `.refuse` shutdown while `work` runs calls `stop`, on the
    /// shutting-down thread, concurrently with `work` or just after it returned (so it must be harmless then); never
    /// when `work` is withdrawn or dropped.
    @discardableResult
    package func submit(stop: Stop? = nil, _ work: @escaping Work) -> Ticket? {
        let (ticket, start) = state.update { state -> (Ticket?, Bool) in
            guard !state.shutDown else { return (nil, false) }
            let ticket = Ticket(id: state.queue.append(work, stop: stop))
            let start = !state.started
            if start {
                state.started = true
                state.alive = count
            }
            return (ticket, start)
        }
        guard let ticket else {
            work(.dropped)
            return nil
        }
        if start {
            for thread in 0..<count {
                startDedicatedThread(named: "\(name)-\(thread)") { [self] in serve(thread) }
            }
        }
        return ticket
    }

    /// Takes the item of `ticket` out of the queue if no thread has taken it yet, and calls it `withdrawn` before
    /// returning true; false when it has started (or ended, or was dropped).
    @discardableResult
    package func withdraw(_ ticket: Ticket) -> Bool {
        guard let work = state.withLock({ $0.queue.remove(ticket.id) }) else { return false }
        work(.withdrawn)
        return true
    }

    /// Work items running now.
    package var running: Int { state.withLock { $0.running } }

    /// Work items queued, waiting for a thread.
    package var waiting: Int { state.withLock { $0.queue.count } }

    /// Takes no more work (a later submission is `dropped` at once) and ends the threads once they are idle: the
    /// queued work runs first (`drain`) or is dropped now and the running work told to stop (`refuse`). Returns
    /// without waiting for the threads.
    package func shutdown(_ mode: Shutdown) {
        let (dropped, stops) = state.update { state -> ([Work], [Stop]) in
            state.shutDown = true
            guard mode == .refuse else { return ([], []) }
            // One critical section with the threads' taking: each item is either still queued (dropped) or running
            // with its stop known (stopped); none starts unstopped after this.
            return (state.queue.removeAll(), Array(state.stops.values))
        }
        for work in dropped { work(.dropped) }
        for stop in stops { stop() }
    }

    /// `shutdown(_:)`, then blocks until every thread has ended (the work running has returned). Only from a thread
    /// that is not one of these nor of the cooperative pool.
    package func shutdownAndWait(_ mode: Shutdown) {
        shutdown(mode)
        state.wait { $0.alive == 0 ? () : nil }
    }

    private func serve(_ thread: Int) {
        while true {
            let next = state.wait { state -> (id: UInt64, work: Work)?? in
                if let item = state.queue.popFirst() {
                    state.running += 1
                    state.stops[item.id] = item.stop
                    return .some((item.id, item.work))
                }
                guard state.shutDown else { return nil }
                state.alive -= 1
                return .some(nil)
            }
            guard let (id, work) = next else {
                // Wakes a `shutdownAndWait`.
                state.update { _ in }
                return
            }
            work(.run(thread: thread))
            state.withLock { state in
                state.running -= 1
                state.stops[id] = nil
            }
        }
    }
}

/// The queue of `WorkerThreads`: first in, first out, with removal by id. Ids grow with each append, so the queue
/// is sorted by them and an item is found by binary search; removed items leave a hole that `popFirst` skips, and
/// the front is taken by index (no shifting of the array).
private struct WorkQueue {
    private var items: [(id: UInt64, work: WorkerThreads.Work?, stop: WorkerThreads.Stop?)] = []
    private var head = 0
    private var lastID: UInt64 = 0
    /// Items queued.
    private(set) var count = 0

    /// Appends `work` and what stops it; returns its id.
    mutating func append(_ work: @escaping WorkerThreads.Work, stop: WorkerThreads.Stop?) -> UInt64 {
        lastID += 1
        items.append((lastID, work, stop))
        count += 1
        return lastID
    }

    mutating func popFirst() -> (id: UInt64, work: WorkerThreads.Work, stop: WorkerThreads.Stop?)? {
        while head < items.count {
            let (id, work, stop) = items[head]
            head += 1
            if let work {
                count -= 1
                compactIfDrained()
                return (id, work, stop)
            }
        }
        compactIfDrained()
        return nil
    }

    /// Removes the item of `id`, if it is queued.
    mutating func remove(_ id: UInt64) -> WorkerThreads.Work? {
        var low = head
        var high = items.count
        while low < high {
            let middle = (low + high) / 2
            if items[middle].id < id { low = middle + 1 } else { high = middle }
        }
        guard low < items.count, items[low].id == id, let work = items[low].work else { return nil }
        items[low].work = nil
        items[low].stop = nil
        count -= 1
        return work
    }

    /// Empties the queue; returns what it held, in order.
    mutating func removeAll() -> [WorkerThreads.Work] {
        let works = items[head...].compactMap(\.work)
        items.removeAll()
        head = 0
        count = 0
        return works
    }

    private mutating func compactIfDrained() {
        guard count == 0 else { return }
        // Keeps the storage of a small queue; a burst's is given back.
        items.removeAll(keepingCapacity: items.capacity <= 1024)
        head = 0
    }
}
