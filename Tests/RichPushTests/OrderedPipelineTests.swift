import Foundation
import RichPush
import Testing

/// The ordered pipeline's bound on what it starts past an item that has not ended (no I/O).
@Suite struct OrderedPipelineTests {
    /// Opened once; every `wait()` before that waits.
    final class Gate: Sendable {
        private let stream: AsyncStream<Void>
        private let continuation: AsyncStream<Void>.Continuation
        init() { (stream, continuation) = AsyncStream<Void>.makeStream() }
        func wait() async { for await _ in stream {} }
        func open() { continuation.finish() }
    }

    /// The next of the inputs 0..<total, counting them in `taken`; nil once all were taken.
    static func take(from taken: LockedValue<Int>, below total: Int) -> Int? {
        taken.withLock { count -> Int? in
            guard count < total else { return nil }
            count += 1
            return count - 1
        }
    }

    @Test(
        "behind an item that does not end, at most `window` items are started; the rest follow, in order, once it ends")
    func window() async throws {
        let gate = Gate()
        let total = 500
        let window = 40
        let taken = LockedValue(0)
        let finished = LockedValue(0)
        let run = Task {
            var emitted: [Int] = []
            await OrderedPipeline.run(
                concurrency: 4, window: window,
                next: { Self.take(from: taken, below: total) },
                process: { index in
                    if index == 0 { await gate.wait() }
                    finished.withLock { $0 += 1 }
                    return index
                },
                emit: { _, index in
                    emitted.append(index)
                    return true
                })
            return emitted
        }
        // Either every other item of the window has ended, or more than the window was taken (the bound broken).
        try await waitUntil("the window to fill", within: .seconds(60)) {
            finished.withLock { $0 } == window - 1 || taken.withLock { $0 } > window
        }
        #expect(taken.withLock { $0 } == window, "items taken while the first had not ended")
        gate.open()
        #expect(await run.value == Array(0..<total))
    }

    /// A batched source as `stream` has: `next()` waits for a batch (here: makes one) and hands out its first item,
    /// `ready()` hands out the rest without waiting; nil from `ready()` at a batch's end.
    final class Batches: Sendable {
        private struct State {
            var made = 0
            var buffered: [Int] = []
            var nextCalls = 0
            var reading = false
            var readyWhileReading = 0
        }
        private let state = LockedValue(State())
        let batches: Int
        let size: Int
        init(batches: Int, size: Int) { (self.batches, self.size) = (batches, size) }

        var nextCalls: Int { state.withLock { $0.nextCalls } }
        var readyWhileReading: Int { state.withLock { $0.readyWhileReading } }

        func next() async -> Int? {
            state.withLock {
                $0.nextCalls += 1
                $0.reading = true
            }
            // Lets the pipeline's task run while this read is under way: a `ready()` now is counted.
            await Task.yield()
            return state.withLock { state -> Int? in
                state.reading = false
                guard state.made < batches else { return nil }
                let first = state.made * size
                state.made += 1
                state.buffered = Array(first + 1..<first + size)
                return first
            }
        }

        func ready() -> Int? {
            state.withLock { state -> Int? in
                if state.reading { state.readyWhileReading += 1 }
                return state.buffered.isEmpty ? nil : state.buffered.removeFirst()
            }
        }
    }

    @Test("items at hand (`ready`) are started without a read of their own, in order, never while a read runs")
    func readyItems() async {
        let source = Batches(batches: 20, size: 25)
        var emitted: [Int] = []
        await OrderedPipeline.run(
            concurrency: 8,
            next: { await source.next() },
            ready: { source.ready() },
            process: { index in
                await Task.yield()
                return index
            },
            emit: { _, index in
                emitted.append(index)
                return true
            })
        #expect(emitted == Array(0..<500))
        // One read a batch and one that finds the end; a pipeline ignoring `ready` reads once an item (501).
        #expect(source.nextCalls == 21)
        #expect(source.readyWhileReading == 0)
    }

    @Test("the unbatcher hands out every item of every batch, in order, through `available()` and `next()`")
    func unbatcher() async {
        let batches = LockedValue([[0, 1, 2], [3], [4, 5]])
        let source = ThreadedSource<[Int]> { batches.withLock { $0.isEmpty ? nil : $0.removeFirst() } }
        let items = Unbatcher(source)
        var taken: [Int] = []
        #expect(items.available() == nil)
        while let item = await items.next() {
            taken.append(item)
            while let more = items.available() { taken.append(more) }
        }
        #expect(taken == Array(0...5))
        #expect(items.available() == nil)
    }

    /// One thread running jobs in the order they were enqueued: the order of the pipeline's work is then the
    /// executor's queue, not the scheduler's choice between two pool threads.
    final class SerialExecutor: TaskExecutor, @unchecked Sendable {
        private let condition = NSCondition()
        private var jobs: [UnownedJob] = []
        private var stopped = false

        init() { Thread.detachNewThread { self.work() } }

        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            condition.lock()
            jobs.append(job)
            condition.signal()
            condition.unlock()
        }

        /// Ends the thread once the queue is empty.
        func stop() {
            condition.lock()
            stopped = true
            condition.signal()
            condition.unlock()
        }

        private func work() {
            while true {
                condition.lock()
                while jobs.isEmpty, !stopped { condition.wait() }
                if jobs.isEmpty {
                    condition.unlock()
                    return
                }
                let job = jobs.removeFirst()
                condition.unlock()
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
        }
    }

    @Test("items at hand start in bursts of `readyBurst`: the jobs queued meanwhile (a deadline's wake-up) run between")
    func readyBursts() async {
        let executor = SerialExecutor()
        defer { executor.stop() }
        let total = OrderedPipeline.readyBurst * 4
        let taken = LockedValue(0)
        let takenWhenFirstRan = LockedValue<Int?>(nil)
        let emitted = await withTaskExecutorPreference(executor) {
            var emitted: [Int] = []
            await OrderedPipeline.run(
                concurrency: total,
                next: { nil },
                ready: { Self.take(from: taken, below: total) },
                process: { index in
                    if index == 0 { takenWhenFirstRan.withLock { $0 = taken.withLock { $0 } } }
                    return index
                },
                emit: { _, index in
                    emitted.append(index)
                    return true
                })
            return emitted
        }
        #expect(emitted == Array(0..<total))
        // Without the bursts every item at hand was taken before the first one's work ran.
        #expect(takenWhenFirstRan.withLock { $0 } == OrderedPipeline.readyBurst)
    }
}
