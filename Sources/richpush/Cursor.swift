import RichPush

/// Hands out input indexes 0..<count, one at a time.
final class Cursor: Sendable {
    private let position = LockedValue(0)
    private let count: Int

    init(count: Int) { self.count = count }

    func next() -> Int? {
        position.withLock { position in
            guard position < count else { return nil }
            defer { position += 1 }
            return position
        }
    }
}
