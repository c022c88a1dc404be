import FixtureOrigin
import Testing

@testable import RichPush

/// Runs `body` with a fetcher for `configuration`, then awaits its shutdown (no thread of the cooperative pool
/// is held while it stops), whether `body` returns or throws.
func withFetcher<Result>(
    _ configuration: Configuration, _ body: (Fetcher) async throws -> Result
) async throws -> Result {
    try await using(Fetcher(configuration: configuration), shutdown: { await $0.shutdown() }, body)
}

/// Runs `body` with an enricher for `configuration`, then awaits its shutdown, whether `body` returns or throws.
func withEnricher<Result>(
    _ configuration: Configuration, _ body: (Enricher) async throws -> Result
) async throws -> Result {
    try await using(Enricher(configuration: configuration), shutdown: { await $0.shutdown() }, body)
}

private func using<Resource, Result>(
    _ resource: Resource, shutdown: (Resource) async -> Void, _ body: (Resource) async throws -> Result
) async throws -> Result {
    do {
        let result = try await body(resource)
        await shutdown(resource)
        return result
    } catch {
        await shutdown(resource)
        throw error
    }
}

@Suite("Lifecycle: shutting down without holding a thread")
struct LifecycleTests {
    @Test("await shutdown() cancels a transfer in flight, removes its partial file, and later fetches are cancelled")
    func asyncShutdown() async throws {
        let bed = try TestBed()
        let fetcher = try Fetcher(configuration: bed.configuration)
        async let stalled = fetcher.fetch(bed.url("/stall"), timeout: .seconds(30))
        try await untilConnected(bed.origin, count: 1)
        await fetcher.shutdown()
        let result = await stalled
        guard case .failure(let failure) = result else {
            Issue.record("a stalled transfer survived shutdown: \(result)")
            return
        }
        #expect(failure.code == .cancelled)
        #expect(bed.entriesOnDisk().isEmpty, "left behind: \(bed.entriesOnDisk())")
        let later = await fetcher.fetch(bed.url("/media/photo.jpg"), timeout: .seconds(5))
        #expect((try? later.get()) == nil)
        // Twice is harmless.
        await fetcher.shutdown()
    }
}

/// Waits (bounded: 10 s) until `origin` has accepted `count` connections; fails the test loudly otherwise.
func untilConnected(_ origin: HTTPOrigin, count: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    for _ in 0..<1000 {
        if origin.connectionCount >= count { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("the origin saw \(origin.connectionCount) connections after 10 s, not \(count)", sourceLocation: sourceLocation)
}
