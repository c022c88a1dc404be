/// The transfers' deadlines in order: a binary min-heap of (deadline, transfer id), so that the loop finds
/// the next deadline in O(1) and expires transfers in O(log n) each, however many are in flight.
///
/// Entries are not removed when a transfer ends early; the loop skips ids it no longer knows.
struct DeadlineQueue {
    private var heap: [(deadline: ContinuousClock.Instant, id: UInt64)] = []

    /// How many deadlines are queued (stale ones included).
    var count: Int { heap.count }

    /// The earliest deadline, or nil.
    var next: ContinuousClock.Instant? { heap.first?.deadline }

    /// Rebuilds the heap from the live transfers only, dropping entries of transfers that ended early.
    mutating func compact(keeping live: [(deadline: ContinuousClock.Instant, id: UInt64)]) {
        heap = []
        heap.reserveCapacity(live.count)
        for entry in live { insert(entry.deadline, id: entry.id) }
    }

    mutating func insert(_ deadline: ContinuousClock.Instant, id: UInt64) {
        heap.append((deadline, id))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the ids of every deadline at or before `now`, earliest first.
    mutating func popDue(_ now: ContinuousClock.Instant) -> [UInt64] {
        var due: [UInt64] = []
        while let first = heap.first, first.deadline <= now {
            due.append(first.id)
            removeFirst()
        }
        return due
    }

    private mutating func removeFirst() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count, heap[right].deadline < heap[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
