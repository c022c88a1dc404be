import Testing

/// Polls `condition` every `interval` until it holds. When `limit` passes first, it fails the test at the caller,
/// naming `what` it waited for, and throws: a test never goes on as if it had seen what it waited for. The limit
/// only bounds a failure; a passing test waits no longer than the condition takes. The default, 30 s, holds on a
/// machine loaded past ten runnable threads a core (10 s did not: whole suites stalled that long in full runs).
package func waitUntil(
    _ what: @autoclosure () -> String, within limit: Duration = .seconds(30),
    every interval: Duration = .milliseconds(10), sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () throws -> Bool
) async throws {
    let end = ContinuousClock.now + limit
    while ContinuousClock.now < end {
        if try condition() { return }
        try await Task.sleep(for: interval)
    }
    try #require(try condition(), "waited \(limit) for \(what())", sourceLocation: sourceLocation)
}
