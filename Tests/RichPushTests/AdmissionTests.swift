import FixtureOrigin
import Foundation
import RichPushCore
import Testing

@testable import RichPush
@testable import RichPushFetch
@testable import RichPushMedia
@testable import RichPushStore

/// What a transfer costs while it waits in the fetch loop's admission queue for its origin, against a loopback
/// origin whose `/stall` route holds the transfers in curl: no easy handle until it is admitted, and an end (expired,
/// cancelled, shut down) as it had when it held one. On a loop of the test's own, not a fetcher's, so that the test
/// can ask it for its `FetchLoop.Census`.
@Suite("A transfer waiting for admission")
struct AdmissionTests {
    /// A loop with `bed`'s settings; stopped by the caller.
    private static func loop(_ bed: TestBed) throws -> FetchLoop {
        let configuration = bed.configuration
        let spares = SpareAttachments(root: try configuration.store.open(), makesAhead: false)
        return FetchLoop(
            settings: FetchSettings(
                network: configuration.network, limits: configuration.limits, spares: spares,
                caps: BodyCaps(limits: configuration.limits, transform: configuration.transform)),
            sniffer: try SniffService())
    }

    /// A bed whose origin takes `connections` at a time, and whose transfers wait out a held response (the low-speed
    /// window would end them at 5 s).
    private static func holding(connections: Int) -> (inout Enricher.Configuration) -> Void {
        { configuration in
            configuration.network.maximumConnectionsPerHost = connections
            configuration.network.lowSpeedWindow = .seconds(120)
        }
    }

    /// The loop's census once `condition` holds (the test fails and throws if it does not within the bound).
    private static func census(
        _ loop: FetchLoop, _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
        until condition: (FetchLoop.Census) -> Bool
    ) async throws -> FetchLoop.Census {
        let end = ContinuousClock.now + .seconds(30)
        while true {
            let census = try #require(await loop.census(), "the loop has stopped", sourceLocation: sourceLocation)
            if condition(census) { return census }
            try #require(
                ContinuousClock.now < end, "waited 30 s for \(what): \(census)", sourceLocation: sourceLocation)
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The failure's code and detail, or nil when `outcome` is not a failure.
    private static func failure(_ outcome: TransferOutcome) -> [String]? {
        guard case .failed(let failure) = outcome else { return nil }
        return [failure.code.rawValue, failure.detail]
    }

    @Test("only admitted transfers hold an easy handle; the next admitted reuses a finished one's")
    func waitingHoldsNoHandle() async throws {
        let bed = try TestBed(Self.holding(connections: 2))
        let loop = try Self.loop(bed)
        // Stops it should the test end early (`stop` is idempotent).
        defer { loop.stop {} }
        let deadline = ContinuousClock.now + .seconds(60)
        // Eight to a route that holds its response: two with the origin's connections, two in curl waiting for one
        // (the admission queue lets in two not started), four waiting for the origin.
        let stalled = (0..<8).map { index in
            Task { await loop.fetch(TransferRequest(url: bed.url("/stall?n=\(index)"), deadline: deadline)) }
        }
        try await untilConnected(bed.origin, count: 2)
        let held = try await Self.census(loop, "four in curl, four waiting") { $0.withHandle == 4 && $0.waiting == 4 }
        #expect(held.handlesMade == 4 && held.idleHandles == 0, "\(held)")
        for task in stalled { task.cancel() }
        for task in stalled {
            #expect(Self.failure(await task.value) == ["cancelled", "cancelled before the transfer finished"])
        }
        // The four cancelled in curl left their handles idle: the next transfer takes one rather than a new one.
        let next = await loop.fetch(TransferRequest(url: bed.url("/media/photo.jpg"), deadline: deadline))
        guard case .stored(let body) = next else {
            Issue.record("\(next)")
            return
        }
        #expect(body.bytes == fixture("photo.jpg").count)
        let after = try #require(await loop.census())
        #expect(after == FetchLoop.Census(withHandle: 0, waiting: 0, handlesMade: 4, idleHandles: 4))
        await loop.stop()
    }

    @Test(
        "a transfer that expires, is cancelled or is shut down while waiting ends as before, without a handle or file")
    func waitingEnds() async throws {
        let bed = try TestBed(Self.holding(connections: 1))
        let loop = try Self.loop(bed)
        defer { loop.stop {} }
        let long = ContinuousClock.now + .seconds(60)
        // The origin's one connection, and its one place in curl for a transfer not started, held until the loop
        // stops.
        let holders = (0..<2).map { index in
            Task { await loop.fetch(TransferRequest(url: bed.url("/stall?n=\(index)"), deadline: long)) }
        }
        try await untilConnected(bed.origin, count: 1)
        _ = try await Self.census(loop, "the holders in curl") { $0.withHandle == 2 }
        // Media the origin would serve at once: these can only end in the queue.
        let soon = ContinuousClock.now + .seconds(1)
        let expiring = (0..<3).map { index in
            Task { await loop.fetch(TransferRequest(url: bed.url("/media/photo.jpg?n=\(index)"), deadline: soon)) }
        }
        for task in expiring {
            #expect(Self.failure(await task.value) == ["expired", "the deadline came first (0 bytes received)"])
        }
        let cancelled = Task { await loop.fetch(TransferRequest(url: bed.url("/media/photo.jpg?c"), deadline: long)) }
        _ = try await Self.census(loop, "the one to cancel waiting") { $0.waiting == 1 }
        cancelled.cancel()
        #expect(Self.failure(await cancelled.value) == ["cancelled", "cancelled before the transfer finished"])
        let shutDown = Task { await loop.fetch(TransferRequest(url: bed.url("/media/photo.jpg?s"), deadline: long)) }
        let last = try await Self.census(loop, "the one to shut down waiting") { $0.waiting == 1 }
        // Seven transfers, two easy handles: the holders'.
        #expect(last == FetchLoop.Census(withHandle: 2, waiting: 1, handlesMade: 2, idleHandles: 0))
        await loop.stop()
        #expect(Self.failure(await shutDown.value) == ["cancelled", "the fetcher has shut down"])
        for holder in holders {
            #expect(Self.failure(await holder.value) == ["cancelled", "the fetcher has shut down"])
        }
        #expect(bed.filesOnDisk().isEmpty, "left behind: \(bed.filesOnDisk())")
        #expect(await loop.census() == nil)
    }
}
