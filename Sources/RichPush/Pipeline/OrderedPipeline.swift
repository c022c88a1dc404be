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

    /// How many inputs at hand start one after another before the pipeline lets the executor's queue run (a yield).
    /// Without it, `stream --concurrency 1000` started every payload at hand at once, and their references' deadline
    /// wake-ups waited behind the start-up work of all the others (bench (d8): 8,000 references expiring together
    /// were handed back 26-40 ms late at the median, up to 2.8 s on a loaded machine, against 6-10 ms with it).
    package static let readyBurst = 16

    private enum Event<Input: Sendable, Output: Sendable>: Sendable {
        case read(Input?)
        case finished(Int, Output)
    }

    /// - Parameters:
    ///   - concurrency: the most items in progress at once.
    ///   - window: the most items started and not yet emitted (at least `concurrency`); by default
    ///     `windowRounds` times `concurrency`.
    ///   - next: the next input, or nil at the end. Never called twice at once.
    ///   - ready: an input already at hand, taken without waiting (nil when none is, and at the end: `next` then
    ///     says which). Called on the caller's task, never while `next` runs; what it hands out `next` does not.
    ///     Starting an item taken this way costs no task to read it: with `stream`'s batched reader, one task a
    ///     payload instead of two.
    ///   - process: the work for one input.
    ///   - emit: called in input order on the caller's task; returning false stops reading more input (the
    ///     items in progress still finish and are emitted).
    ///   - flush: called after each run of emits that became due together (one write for a burst of results,
    ///     and never a result held back waiting for a later one); returning false stops reading more input.
    package static func run<Input: Sendable, Output: Sendable>(
        concurrency: Int,
        window: Int? = nil,
        next: @escaping @Sendable () async -> Input?,
        ready: () -> Input? = { nil },
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
            /// Whether another input may be taken now: none is being read, and there is room in flight and in the
            /// window.
            func canTake() -> Bool {
                !exhausted && !reading && inFlight < concurrency && nextIndex - nextToEmit < window
            }
            func start(_ input: Input) {
                let index = nextIndex
                nextIndex += 1
                inFlight += 1
                group.addTask { .finished(index, await process(input)) }
            }
            while true {
                var burst = 0
                while canTake(), let input = ready() {
                    start(input)
                    burst += 1
                    // Back to the end of the executor's queue now and then: the jobs already queued (the started
                    // items' own, a deadline's wake-up) run before more items start.
                    if burst == readyBurst {
                        burst = 0
                        await Task.yield()
                    }
                }
                if canTake() {
                    reading = true
                    group.addTask { .read(await next()) }
                }
                guard let event = await group.next() else { return }
                switch event {
                case .read(let input?):
                    reading = false
                    start(input)
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
