import FixtureOrigin
import Foundation
import Testing

@testable import RichPush

/// Runs `body` with a fetcher for `configuration`, then awaits its shutdown (no thread of the cooperative pool
/// is held while it stops), whether `body` returns or throws.
func withFetcher<Result>(
    _ configuration: Enricher.Configuration, _ body: (Fetcher) async throws -> Result
) async throws -> Result {
    try await using(Fetcher(configuration: configuration), shutdown: { await $0.shutdown() }, body)
}

/// Runs `body` with an enricher for `configuration`, then awaits its shutdown, whether `body` returns or throws.
func withEnricher<Result>(
    _ configuration: Enricher.Configuration, _ body: (Enricher) async throws -> Result
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
    /// A bed for payloads on `/stall`, which only shutdown, cancellation or the drain may end: the default 5 s
    /// low-speed window ended one as `timeout` first in a full run beside helpers' builds (load 9 on two cores).
    static func stallingBed() throws -> TestBed { try TestBed { $0.network.lowSpeedWindow = .seconds(60) } }

    @Test("await shutdown() cancels a transfer in flight, removes its partial file, and later fetches are cancelled")
    func asyncShutdown() async throws {
        let bed = try Self.stallingBed()
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

    /// What starts a graceful shutdown.
    enum Stop: String, CaseIterable, CustomTestStringConvertible {
        case shutdown = "await shutdown()"
        case cancelRun = "cancelling run()"
        var testDescription: String { rawValue }
    }

    @Test(
        """
        shutdown drains: a payload in flight finishes by its own deadline, one arriving meanwhile is cancelled at once
        """,
        arguments: Stop.allCases)
    func shutdownDrains(stop: Stop) async throws {
        let bed = try TestBed()
        let enricher = try Enricher(configuration: bed.configuration)
        let running = Task { try await enricher.run() }
        // The whole file comes 800 ms after the first byte: in flight when shutdown begins, done well before 30 s.
        async let slow = enricher.enrich(TestBed.adobePayload(bed.url("/slow/photo.jpg?ms=800")), timeout: .seconds(30))
        try await untilConnected(bed.origin, count: 1)
        let stopping: Task<Void, Never>
        switch stop {
        case .shutdown: stopping = Task { await enricher.shutdown() }
        case .cancelRun:
            running.cancel()
            stopping = Task { _ = try? await running.value }
        }
        try await waitUntil("shutdown to begin") { !enricher.gate.isOpen }
        let late = await enricher.enrich(TestBed.adobePayload(bed.url("/media/logo.png")), timeout: .seconds(30))
        #expect(late.outcome == .cancelled)
        #expect(late.problems.map(\.code) == [.cancelled])
        #expect(late.attachments.isEmpty)
        await stopping.value
        try await running.value
        // Both ended only after the drain: the payload had returned, and returned well.
        #expect(enricher.gate.inside == 0)
        let result = await slow
        #expect(result.outcome == .complete, "drained payload: \(result.problems)")
        let media = try #require(result.attachments.first?.media)
        #expect(FileManager.default.fileExists(atPath: media.path))
        #expect(!bed.origin.requestLog.contains { $0.hasPrefix("/media/logo.png") }, "a refused payload was fetched")
        #expect(bed.cacheFiles().isEmpty, "cache links left: \(bed.cacheFiles())")
    }

    @Test("a drain deadline ends the drain: what remains is cancelled (outcome cancelled) and leaves no file")
    func drainDeadline() async throws {
        let bed = try Self.stallingBed()
        let enricher = try Enricher(configuration: bed.configuration)
        async let stalled = enricher.enrich(TestBed.adobePayload(bed.url("/stall")), timeout: .seconds(60))
        try await untilConnected(bed.origin, count: 1)
        let start = ContinuousClock.now
        await enricher.shutdown(drainTimeout: .milliseconds(100))
        let result = await stalled
        // Generous: the payload's own deadline is 60 s away; a drain that ignored its deadline would wait for it.
        #expect(ContinuousClock.now - start < .seconds(20))
        #expect(result.outcome == .cancelled)
        #expect(result.problems.map(\.code) == [.cancelled])
        #expect(bed.entriesOnDisk().isEmpty, "left behind: \(bed.entriesOnDisk())")
    }

    @Test(
        """
        a drain deadline cuts a publication in flight as it cuts a transfer: the payload ends cancelled, its file \
        removed, long before its own deadline
        """)
    func drainDeadlineCutsPublication() async throws {
        let publisher = StuckPublisher()
        let bed = try TestBed { $0.publisher = publisher }
        let enricher = try Enricher(configuration: bed.configuration)
        async let stuck = enricher.enrich(TestBed.adobePayload(bed.url("/media/photo.jpg")), timeout: .seconds(60))
        try await waitUntil("the publication to start") { publisher.started.withLock { $0 } == 1 }
        let start = ContinuousClock.now
        await enricher.shutdown(drainTimeout: .milliseconds(100))
        let result = await stuck
        // Generous: the payload's own deadline is 60 s away; a drain that did not cut it would wait for it.
        #expect(ContinuousClock.now - start < .seconds(20))
        #expect(result.outcome == .cancelled)
        #expect(result.problems.map(\.code) == [.cancelled], "\(result.problems)")
        #expect(publisher.cancelled.withLock { $0 } == 1, "the publisher's task was cancelled")
        #expect(bed.entriesOnDisk().isEmpty, "left behind: \(bed.entriesOnDisk())")
    }

    @Test("syncShutdown(), from synchronous code, cancels a payload in flight rather than draining it")
    func syncShutdownAborts() async throws {
        let bed = try Self.stallingBed()
        let enricher = try Enricher(configuration: bed.configuration)
        let stalled = Task { await enricher.enrich(TestBed.adobePayload(bed.url("/stall")), timeout: .seconds(60)) }
        try await untilConnected(bed.origin, count: 1)
        let start = ContinuousClock.now
        // On a thread of its own, as synchronous code calls it (it is noasync: it blocks its thread until the loop
        // has stopped).
        try await offPool { enricher.syncShutdown() }
        let result = await stalled.value
        // Generous: a drain would wait for the payload's own deadline, 60 s away.
        #expect(ContinuousClock.now - start < .seconds(20))
        #expect(result.outcome == .cancelled)
        #expect(result.problems.map(\.code) == [.cancelled])
        #expect(bed.entriesOnDisk().isEmpty, "left behind: \(bed.entriesOnDisk())")
        let late = await enricher.enrich(TestBed.adobePayload(bed.url("/media/logo.png")), timeout: .seconds(30))
        #expect(late.outcome == .cancelled)
    }

    @Test("a payload whose caller is cancelled gets outcome cancelled, not failed")
    func callerCancels() async throws {
        let bed = try Self.stallingBed()
        try await withEnricher(bed.configuration) { enricher in
            let task = Task { await enricher.enrich(TestBed.adobePayload(bed.url("/stall")), timeout: .seconds(60)) }
            try await untilConnected(bed.origin, count: 1)
            task.cancel()
            let result = await task.value
            #expect(result.outcome == .cancelled)
            #expect(result.problems.map(\.code) == [.cancelled])
            #expect(result.json(input: "x").objectValue?["outcome"]?.stringValue == "cancelled")
            #expect(bed.entriesOnDisk().isEmpty, "left behind: \(bed.entriesOnDisk())")
        }
    }

    @Test("run() returns once shutdown() has completed")
    func runEndsWithShutdown() async throws {
        let bed = try TestBed()
        let enricher = try Enricher(configuration: bed.configuration)
        let ended = LockedValue(false)
        let running = Task {
            try await enricher.run()
            ended.withLock { $0 = true }
        }
        // Asked twice, the URL gets a cache link (see MediaCacheTests).
        for _ in 0..<2 {
            _ = await enricher.enrich(TestBed.adobePayload(bed.url("/media/photo.jpg")), timeout: .seconds(30))
        }
        #expect(bed.cacheFiles().count == 1)
        // run() has reached its wait for the shutdown (or returned, wrongly): it waits on the gate.
        try await waitUntil("run() to wait for the shutdown") { ended.withLock { $0 } || enricher.gate.waiting > 0 }
        #expect(!ended.withLock { $0 }, "run() returned before any shutdown")
        let stopping = Task { await enricher.shutdown() }
        try await running.value
        // run() returned after the shutdown had finished, the cache's links removed, not when it began.
        #expect(bed.cacheFiles().isEmpty)
        await stopping.value
    }

    @Test("an enricher dropped without shutdown removes its media cache's links")
    func forgottenShutdown() async throws {
        let bed = try TestBed()
        func enrichAndForget() async throws {
            let enricher = try Enricher(configuration: bed.configuration)
            // Asked twice, the URL gets a cache link (see MediaCacheTests).
            for _ in 0..<2 {
                let result = await enricher.enrich(
                    TestBed.adobePayload(bed.url("/media/photo.jpg")), timeout: .seconds(30))
                #expect(result.outcome == .complete)
            }
            #expect(bed.cacheFiles().count == 1)
        }
        try await enrichAndForget()
        let cacheDirectories = try FileManager.default.contentsOfDirectory(atPath: bed.attachments)
            .filter { $0.hasPrefix(".cache-") }
        #expect(cacheDirectories.isEmpty, "left behind: \(cacheDirectories)")
        // The attachments handed out are the caller's: they stay.
        #expect(bed.filesOnDisk().count == 2)
    }
}

@Suite("WorkGate: admission and drain, without I/O")
struct WorkGateTests {
    @Test("work enters while open; close refuses more; untilIdle returns once the last one has left")
    func drain() async {
        let gate = WorkGate()
        #expect(gate.enter())
        #expect(gate.enter())
        #expect(gate.close())
        #expect(!gate.close(), "a second close is not the first")
        #expect(!gate.enter())
        let idle = Task { await gate.untilIdle() }
        gate.leave()
        #expect(gate.inside == 1)
        gate.leave()
        await idle.value
        #expect(gate.inside == 0)
    }

    @Test("untilIdle on an open gate waits for the close, and a cancelled waiter returns at once")
    func waiting() async {
        let gate = WorkGate()
        let closed = Task { await gate.untilClosed() }
        let cancelled = Task { await gate.untilIdle() }
        cancelled.cancel()
        await cancelled.value
        #expect(gate.isOpen)
        let idle = Task { await gate.untilIdle() }
        gate.close()
        await closed.value
        await idle.value
        #expect(!gate.isOpen)
    }
}

extension WorkGateTests {
    @Test(
        """
        with a limit: work past the room is refused as full, all or none; room comes back as work leaves; a closed \
        gate refuses as closed but counts work already taken
        """
    )
    func limit() {
        let gate = WorkGate(limit: 3)
        #expect(gate.admit(2) == .admitted)
        #expect(gate.admit(2) == .full)
        #expect(gate.room == 1)
        #expect(gate.admit() == .admitted)
        #expect(gate.room == 0)
        #expect(!gate.enter())
        gate.leave(2)
        #expect(gate.room == 2)
        gate.close()
        #expect(gate.admit() == .closed)
        #expect(gate.room == 0)
        gate.enter(taken: 1)
        #expect(gate.inside == 2)
    }

    @Test(
        """
        a thread waiting for room is let go when work leaves a full gate (with the room) or the gate closes (with \
        none); untilEmpty needs no close
        """
    )
    func waitingForRoom() async throws {
        let gate = WorkGate(limit: 1)
        #expect(gate.enter())
        #expect(gate.waitForRoom(timeout: .milliseconds(10)) == 0, "full: the wait times out")
        let started = ContinuousClock.now
        let freed = Task { try await offPool { gate.waitForRoom(timeout: .seconds(30)) } }
        gate.leave()
        #expect(try await freed.value == 1)
        #expect(gate.enter())
        let empty = Task { await gate.untilEmpty() }
        gate.leave()
        await empty.value
        #expect(gate.isOpen, "empty, not closed")
        #expect(gate.enter())
        let closed = Task { try await offPool { gate.waitForRoom(timeout: .seconds(30)) } }
        gate.close()
        #expect(try await closed.value == 0)
        // Neither thread waited out its 30 s: each was woken.
        #expect(ContinuousClock.now - started < .seconds(20))
    }
}

/// Waits (bounded: 10 s) until `origin` has accepted `count` connections; fails the test loudly otherwise.
func untilConnected(_ origin: HTTPOrigin, count: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    for _ in 0..<1000 {
        if origin.connectionCount >= count { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    Issue.record(
        "the origin saw \(origin.connectionCount) connections after 10 s, not \(count)", sourceLocation: sourceLocation)
}

/// A store that never answers: each publication waits until its task is cancelled or its deadline comes, counting
/// the ones started and the ones cancelled.
final class StuckPublisher: MediaPublisher, Sendable {
    let started = LockedValue(0)
    let cancelled = LockedValue(0)

    func publish(_ media: FetchedMedia) throws(PublishFailure) -> String {
        throw PublishFailure("only publish(_:deadline:) is called", code: "unused")
    }

    func publish(_ media: FetchedMedia, deadline: ContinuousClock.Instant) async throws(PublishFailure) -> String {
        started.withLock { $0 += 1 }
        do {
            try await Task.sleep(until: deadline, clock: .continuous)
        } catch {
            cancelled.withLock { $0 += 1 }
            throw PublishFailure("the upload was stopped", code: "cancelled")
        }
        throw PublishFailure("the deadline came before the store answered", code: "expired")
    }
}
