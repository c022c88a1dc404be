import Foundation
import Testing

/// Polls `condition` every `interval` until it holds. When `limit` passes first, it fails the test at the caller,
/// naming `what` it waited for, and throws: a test never goes on as if it had seen what it waited for. The limit
/// only bounds a failure; a passing test waits no longer than the condition takes. The default, 30 s, holds on a
/// machine loaded past ten runnable threads a core (10 s did not: whole suites stalled that long in full runs). The
/// first call starts `PoolWatch`, which says when the pool itself stalled.
package func waitUntil(
    _ what: @autoclosure () -> String, within limit: Duration = .seconds(30),
    every interval: Duration = .milliseconds(10), sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () throws -> Bool
) async throws {
    PoolWatch.start()
    let end = ContinuousClock.now + limit
    while ContinuousClock.now < end {
        if try condition() { return }
        try await Task.sleep(for: interval)
    }
    try #require(try condition(), "waited \(limit) for \(what())", sourceLocation: sourceLocation)
}

/// Runs `work` on a thread of its own, where it may block in `open` on the FIFO at `fifo` (a test's trap), and waits
/// for its result within `limit`. When the limit passes first, it opens the FIFO for writing, which ends a blocked
/// `open`, so that the failed test leaves no thread behind, and throws as `waitUntil` does.
package func result<T: Sendable>(
    of what: @autoclosure () -> String, within limit: Duration, unblocking fifo: String,
    sourceLocation: SourceLocation = #_sourceLocation, _ work: @escaping @Sendable () -> T
) async throws -> T {
    let finished = ThreadResult<T>()
    Thread { finished.set(work()) }.start()
    do {
        try await waitUntil(what(), within: limit, sourceLocation: sourceLocation) { finished.value != nil }
    } catch {
        let writer = open(fifo, O_WRONLY | O_NONBLOCK)
        if writer >= 0 { close(writer) }
        throw error
    }
    return try #require(finished.value, sourceLocation: sourceLocation)
}

/// A value a thread sets once, read under a lock.
private final class ThreadResult<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T?

    func set(_ value: T) { lock.withLock { stored = value } }
    var value: T? { lock.withLock { stored } }
}
