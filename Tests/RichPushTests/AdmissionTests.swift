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
@Suite("A transfer waiting for admission", .timeLimit(.minutes(1)))
struct AdmissionTests {
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

    /// `count` fetches of `/stall` on `loop`, each a task: transfers that hold their origin's connection (or their
    /// place in curl) until they are cancelled or the loop stops.
    private static func stalled(
        _ count: Int, on loop: FetchLoop, _ bed: TestBed, deadline: ContinuousClock.Instant
    ) -> [Task<TransferOutcome, Never>] {
        (0..<count).map { index in
            Task { await loop.fetch(TransferRequest(url: bed.url("/stall?n=\(index)"), deadline: deadline)) }
        }
    }

    /// The failure's code and detail, or nil when `outcome` is not a failure.
    private static func failure(_ outcome: TransferOutcome) -> [String]? {
        guard case .failed(let failure) = outcome else { return nil }
        return [failure.code.rawValue, failure.detail]
    }

    /// The bytes of the body delivered, stored or held in memory; nil when `outcome` delivered none.
    private static func delivered(_ outcome: TransferOutcome) -> Int? {
        switch outcome {
        case .stored(let body): return body.bytes
        case .held(let body): return body.bytes.count
        case .notModified, .probed, .failed: return nil
        }
    }

    @Test("only admitted transfers hold an easy handle; the next admitted reuses a finished one's")
    func waitingHoldsNoHandle() async throws {
        let bed = try TestBed(Self.holding(connections: 2))
        let loop = try bed.fetchLoop(sniffer: try SniffService())
        // Stops it should the test end early (`stop` is idempotent).
        defer { loop.stop {} }
        let deadline = ContinuousClock.now + .seconds(60)
        // Eight to a route that holds its response: two with the origin's connections, two in curl waiting for one
        // (the admission queue lets in two not started), four waiting for the origin.
        let stalled = Self.stalled(8, on: loop, bed, deadline: deadline)
        try await untilConnected(bed.origin, count: 2)
        let held = try await Self.census(loop, "four in curl, four waiting") { $0.withHandle == 4 && $0.waiting == 4 }
        #expect(held.handlesMade == 4 && held.idleHandles == 0, "\(held)")
        for task in stalled { task.cancel() }
        for task in stalled {
            #expect(Self.failure(await task.value) == ["cancelled", "cancelled before the transfer finished"])
        }
        // The four cancelled in curl left their handles idle: the next transfer takes one rather than a new one.
        let next = await loop.fetch(TransferRequest(url: bed.url("/media/photo.jpg"), deadline: deadline))
        #expect(Self.delivered(next) == fixture("photo.jpg").count, "\(next)")
        let after = try #require(await loop.census())
        #expect(after == FetchLoop.Census(withHandle: 0, waiting: 0, handlesMade: 4, idleHandles: 4))
        await loop.stop()
    }

    @Test(
        "a transfer that expires, is cancelled or is shut down while waiting ends as before, without a handle or file")
    func waitingEnds() async throws {
        let bed = try TestBed(Self.holding(connections: 1))
        let loop = try bed.fetchLoop(sniffer: try SniffService())
        defer { loop.stop {} }
        let long = ContinuousClock.now + .seconds(60)
        // The origin's one connection, and its one place in curl for a transfer not started, held until the loop
        // stops.
        let holders = Self.stalled(2, on: loop, bed, deadline: long)
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

    @Test("a waiting one goes in on a settled one's handle as room comes; one curl's options refuse hands its room on")
    func admittedLater() async throws {
        let bed = try TestBed(Self.holding(connections: 1))
        let loop = try bed.fetchLoop(sniffer: try SniffService())
        defer { loop.stop {} }
        let long = ContinuousClock.now + .seconds(60)
        // One after the other, so that the first has the origin's one connection and the second is the one
        // transfer not started that the origin may have in curl.
        let connected = Task { await loop.fetch(TransferRequest(url: bed.url("/stall?connected"), deadline: long)) }
        try await untilConnected(bed.origin, count: 1)
        _ = try await Self.census(loop, "the first in curl") { $0.withHandle == 1 }
        let pending = Task { await loop.fetch(TransferRequest(url: bed.url("/stall?pending"), deadline: long)) }
        _ = try await Self.census(loop, "the second in curl") { $0.withHandle == 2 }
        // A tenant's settings whose user agent curl refuses (over CURL_MAX_INPUT_LENGTH, 8,000,000 bytes): found
        // only as the transfer is configured, once admitted.
        var network = loop.settings.network
        network.userAgent = String(repeating: "a", count: 8_000_001)
        let refusing = FetchSettings(
            network: network, limits: loop.settings.limits, spares: loop.settings.spares, caps: loop.settings.caps)
        let refused = Task {
            await loop.fetch(TransferRequest(url: bed.url("/media/photo.jpg?r"), deadline: long, settings: refusing))
        }
        _ = try await Self.census(loop, "the refused one waiting") { $0.waiting == 1 }
        let after = Task { await loop.fetch(TransferRequest(url: bed.url("/media/photo.jpg?a"), deadline: long)) }
        _ = try await Self.census(loop, "two waiting") { $0.waiting == 2 }
        // The pending one leaves: its room and its handle go to the refused one in the same iteration, whose room
        // and handle then go to the next.
        pending.cancel()
        #expect(Self.failure(await pending.value) == ["cancelled", "cancelled before the transfer finished"])
        let failure = try #require(Self.failure(await refused.value))
        #expect(failure.first == "network" && failure.last?.contains("curl_easy_setopt") == true, "\(failure)")
        let admitted = try await Self.census(loop, "the next admitted") { $0.waiting == 0 }
        #expect(admitted.withHandle == 2 && admitted.handlesMade == 2, "\(admitted)")
        // The connection freed, the next runs to its end.
        connected.cancel()
        #expect(Self.failure(await connected.value) == ["cancelled", "cancelled before the transfer finished"])
        let last = await after.value
        #expect(Self.delivered(last) == fixture("photo.jpg").count, "\(last)")
        #expect(await loop.census() == FetchLoop.Census(withHandle: 0, waiting: 0, handlesMade: 2, idleHandles: 2))
        await loop.stop()
    }

    @Test("a waiting transfer keeps its deadline when the loop compacts its deadlines (over 1,024, most of them stale)")
    func deadlineKeptThroughCompaction() async throws {
        let bed = try TestBed(Self.holding(connections: 1))
        let loop = try bed.fetchLoop(sniffer: try SniffService())
        defer { loop.stop {} }
        let long = ContinuousClock.now + .seconds(60)
        let holders = Self.stalled(2, on: loop, bed, deadline: long)
        _ = try await Self.census(loop, "the holders in curl") { $0.withHandle == 2 }
        let soon = ContinuousClock.now + .seconds(3)
        let expiring = Task { await loop.fetch(TransferRequest(url: bed.url("/media/photo.jpg?e"), deadline: soon)) }
        // 1,100 more waiting, then cancelled: their deadlines stay in the heap, which is then compacted to the live
        // transfers' (the holders' and the expiring one's).
        let fillers = (0..<1100).map { index in
            Task { await loop.fetch(TransferRequest(url: bed.url("/media/photo.jpg?f=\(index)"), deadline: long)) }
        }
        _ = try await Self.census(loop, "all waiting") { $0.waiting == 1101 }
        for filler in fillers { filler.cancel() }
        for filler in fillers {
            #expect(Self.failure(await filler.value) == ["cancelled", "cancelled before the transfer finished"])
        }
        _ = try await Self.census(loop, "the expiring one ended") { $0.waiting == 0 }
        #expect(Self.failure(await expiring.value) == ["expired", "the deadline came first (0 bytes received)"])
        await loop.stop()
        for holder in holders {
            #expect(Self.failure(await holder.value) == ["cancelled", "the fetcher has shut down"])
        }
    }
}
