import Dispatch

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
