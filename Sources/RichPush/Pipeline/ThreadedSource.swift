import Dispatch

/// Runs a blocking producer on a thread of its own, one item per request, so that blocking reads (standard
/// input) never hold one of the few threads Swift's concurrency pool has.
package final class ThreadedSource<Item: Sendable>: @unchecked Sendable {
    // Touched on the source's thread only.
    private let produce: () -> Item?
    private let requests = DispatchSemaphore(value: 0)
    private let waiting = LockedValue<Waiting>(Waiting())

    private struct Waiting {
        var continuation: CheckedContinuation<Item?, Never>?
        var stopped = false
    }

    /// `produce` runs on the source's thread only; nil ends the source.
    package init(_ produce: @escaping () -> Item?) {
        self.produce = produce
        startDedicatedThread { [self] in loop() }
    }

    /// The next item, or nil at the end or once stopped; call one at a time.
    package func next() async -> Item? {
        await withCheckedContinuation { continuation in
            let stopped = waiting.withLock { waiting in
                if !waiting.stopped { waiting.continuation = continuation }
                return waiting.stopped
            }
            if stopped {
                continuation.resume(returning: nil)
            } else {
                requests.signal()
            }
        }
    }

    /// Ends the source now: a `next()` waiting gets nil at once, as does every later one. A read the thread
    /// is blocked in finishes in its own time and its item is dropped.
    package func stop() {
        let continuation = waiting.withLock { waiting in
            waiting.stopped = true
            defer { waiting.continuation = nil }
            return waiting.continuation
        }
        continuation?.resume(returning: nil)
    }

    private func loop() {
        var ended = false
        // Runs for the life of the process: one item per request; after the end, nil for every request.
        while true {
            requests.wait()
            let item = ended ? nil : produce()
            if item == nil { ended = true }
            let continuation = waiting.withLock { waiting in
                defer { waiting.continuation = nil }
                return waiting.continuation
            }
            continuation?.resume(returning: item)
        }
    }
}
