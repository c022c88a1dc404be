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
                next: {
                    taken.withLock { count -> Int? in
                        guard count < total else { return nil }
                        count += 1
                        return count - 1
                    }
                },
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
}
