import Dispatch

/// Hands out the items of a batched source one at a time. `next()` and `available()` are called one at a time.
///
/// A batch is kept whole and read through an index: taking each item with `removeFirst()` moved the rest of the
/// batch every time (up to 256 items), 2.3% of the campaign's samples (bench (b), `perf record`).
package final class Unbatcher<Item: Sendable>: Sendable {
    private struct Buffered {
        var batch: [Item] = []
        /// The index in `batch` of the next item to hand out.
        var next = 0
    }

    private let source: ThreadedSource<[Item]>
    private let buffered = LockedValue(Buffered())

    package init(_ source: ThreadedSource<[Item]>) { self.source = source }

    /// The next item of the batch at hand, without waiting; nil when the batch is used up (`next()` then waits for
    /// another, or says the source ended).
    package func available() -> Item? {
        buffered.withLock { buffered -> Item? in
            guard buffered.next < buffered.batch.count else { return nil }
            defer { buffered.next += 1 }
            return buffered.batch[buffered.next]
        }
    }

    package func next() async -> Item? {
        if let item = available() { return item }
        guard let batch = await source.next(), let first = batch.first else { return nil }
        buffered.withLock { $0 = Buffered(batch: batch, next: 1) }
        return first
    }
}
