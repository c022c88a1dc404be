import Dispatch

/// Runs work items with bounded concurrency and hands their results over in input order, each as soon as
/// every earlier one is out. Reading the next input and finishing work race freely: a result never waits
/// for more input to arrive. Behind an item that takes long, at most `window` items are started past it, so what
/// waits to be emitted is bounded however much input there is.
package enum OrderedPipeline {
    /// How many items may be started from the oldest one not yet emitted, in rounds of `concurrency`. Default
    /// 32: behind one payload that takes its whole deadline, the others go on for 31 rounds of the concurrency
    /// (1,024 items at the default 32, about 0.2 to 2 MB of result lines), then wait for it. Without a bound,
    /// every later line of a batch was processed while a stuck one waited, and its result held until it ended.
    package static let windowRounds = 32

    private enum Event<Input: Sendable, Output: Sendable>: Sendable {
        case read(Input?)
        case finished(Int, Output)
    }

    /// - Parameters:
    ///   - concurrency: the most items in progress at once.
    ///   - window: the most items started and not yet emitted (at least `concurrency`); by default
    ///     `windowRounds` times `concurrency`.
    ///   - next: the next input, or nil at the end. Never called twice at once.
    ///   - process: the work for one input.
    ///   - emit: called in input order on the caller's task; returning false stops reading more input (the
    ///     items in progress still finish and are emitted).
    ///   - flush: called after each run of emits that became due together (one write for a burst of results,
    ///     and never a result held back waiting for a later one); returning false stops reading more input.
    package static func run<Input: Sendable, Output: Sendable>(
        concurrency: Int,
        window: Int? = nil,
        next: @escaping @Sendable () async -> Input?,
        process: @escaping @Sendable (Input) async -> Output,
        emit: (Int, Output) -> Bool,
        flush: () -> Bool = { true }
    ) async {
        let window = max(window ?? concurrency * windowRounds, concurrency)
        await withTaskGroup(of: Event<Input, Output>.self) { group in
            var exhausted = false
            var reading = false
            var inFlight = 0
            var nextIndex = 0
            var nextToEmit = 0
            var done: [Int: Output] = [:]
            while true {
                if !exhausted, !reading, inFlight < concurrency, nextIndex - nextToEmit < window {
                    reading = true
                    group.addTask { .read(await next()) }
                }
                guard let event = await group.next() else { return }
                switch event {
                case .read(let input?):
                    reading = false
                    let index = nextIndex
                    nextIndex += 1
                    inFlight += 1
                    group.addTask { .finished(index, await process(input)) }
                case .read(nil):
                    reading = false
                    exhausted = true
                case .finished(let index, let output):
                    inFlight -= 1
                    done[index] = output
                    guard done[nextToEmit] != nil else { continue }
                    while let ready = done.removeValue(forKey: nextToEmit) {
                        if !emit(nextToEmit, ready) { exhausted = true }
                        nextToEmit += 1
                    }
                    if !flush() { exhausted = true }
                }
            }
        }
    }
}

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

/// Hands out the items of a batched source one at a time. `next()` is called one at a time.
package final class Unbatcher<Item: Sendable>: Sendable {
    private let source: ThreadedSource<[Item]>
    private let buffered = LockedValue<[Item]>([])

    package init(_ source: ThreadedSource<[Item]>) { self.source = source }

    package func next() async -> Item? {
        if let item = buffered.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { return item }
        guard var batch = await source.next(), !batch.isEmpty else { return nil }
        let first = batch.removeFirst()
        buffered.withLock { $0 = batch }
        return first
    }
}
