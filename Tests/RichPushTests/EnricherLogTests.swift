import FixtureOrigin
import Foundation
import RichPushCore
import Testing

@testable import RichPush

/// A handler that keeps every event it is given, in order.
final class RecordingLogHandler: Enricher.LogHandler {
    let minimumLevel: Enricher.LogEvent.Level
    private let events = LockedValue<[Enricher.LogEvent]>([])

    init(minimumLevel: Enricher.LogEvent.Level) { self.minimumLevel = minimumLevel }

    func log(_ event: Enricher.LogEvent) { events.withLock { $0.append(event) } }

    var recorded: [Enricher.LogEvent] { events.withLock { $0 } }
    var names: [Enricher.LogEvent.Name] { recorded.map(\.name) }
}

/// A publisher that refuses everything.
struct RefusingPublisher: MediaPublisher {
    func publish(_ media: FetchedMedia) throws(PublishFailure) -> String {
        throw PublishFailure("the store is full", code: "QuotaExceeded")
    }
}

@Suite("The engine's log: what a host application is told, and only at the level it asked for")
struct EnricherLogTests {
    func bed(_ handler: RecordingLogHandler, publisher: (any MediaPublisher)? = nil) throws -> TestBed {
        try TestBed { configuration in
            configuration.retry.retries = 2
            configuration.retry.initialBackoff = .milliseconds(20)
            configuration.retry.minimumTimeLeft = .milliseconds(200)
            configuration.retry.jitterSeed = 1
            configuration.publisher = publisher
            configuration.logHandler = handler
        }
    }

    @Test("each retry as it is scheduled, then the payload's end, then the shutdown's beginning and end")
    func events() async throws {
        let handler = RecordingLogHandler(minimumLevel: .debug)
        let bed = try bed(handler)
        let url = bed.url("/fail-first/2/503/photo.jpg")
        let result = try await withEnricher(bed.configuration) { enricher in
            await enricher.enrich(
                json: Array(#"{"aps":{"mutable-content":1},"adb_media":"\#(url)"}"#.utf8), source: "one.json",
                deadline: .now + .seconds(30))
        }
        #expect(result.outcome == .complete, "\(result.problems)")
        #expect(handler.names == [.retry, .retry, .payloadFinished, .shutdownBegan, .shutdownFinished])
        let retries = handler.recorded.filter { $0.name == .retry }
        #expect(retries.map { $0.metadata["attempt"] } == ["1", "2"])
        #expect(retries.allSatisfy { $0.metadata["url"] == url && $0.metadata["code"] == "http-status" })
        #expect(retries.allSatisfy { $0.level == .info && Int($0.metadata["delay_ms"] ?? "") != nil })
        #expect(retries.first?.metadata["detail"]?.contains("503") == true)
        let finished = try #require(handler.recorded.first { $0.name == .payloadFinished })
        #expect(finished.metadata["outcome"] == "complete")
        #expect(finished.metadata["input"] == "one.json")
        #expect(finished.metadata["attachments"] == "1")
        #expect(finished.metadata["problems"] == "0")
        #expect(finished.metadata["elapsed_ms"] == String(result.elapsed.inMilliseconds))
        let began = try #require(handler.recorded.first { $0.name == .shutdownBegan })
        #expect(began.metadata == ["in_flight": "0"])
        #expect(began.level == .notice)
        let ended = try #require(handler.recorded.last)
        #expect(ended.metadata["drained"] == "true")
        #expect(Int(ended.metadata["elapsed_ms"] ?? "") != nil)
    }

    @Test("a payload still in flight at the drain deadline: the shutdown says how many, its drain, and not drained")
    func drainCut() async throws {
        let handler = RecordingLogHandler(minimumLevel: .notice)
        let bed = try TestBed {
            $0.network.lowSpeedWindow = .seconds(60)
            $0.logHandler = handler
        }
        let enricher = try Enricher(configuration: bed.configuration)
        let payload = TestBed.adobePayload(bed.url("/stall"))
        let work = Task { await enricher.enrich(payload, timeout: .seconds(60)) }
        // The event that shows the payload is in flight: the origin has its request.
        try await waitUntil("the origin receives /stall", within: .seconds(30)) {
            bed.origin.requestLog.contains("/stall")
        }
        await enricher.shutdown(drainTimeout: .milliseconds(100))
        #expect(await work.value.outcome == .cancelled)
        #expect(handler.names == [.shutdownBegan, .shutdownFinished])
        #expect(handler.recorded.first?.metadata["in_flight"] == "1")
        // The drain's length as it stood when the shutdown began: 100 ms less the moment it took to get there.
        #expect((1...100).contains(Int(handler.recorded.first?.metadata["drain_ms"] ?? "") ?? 0))
        #expect(handler.recorded.last?.metadata["drained"] == "false")
    }

    @Test(
        """
        a deadline or a drain as far off as a Duration goes (a caller's "no deadline") is a day: the payload is \
        processed, the shutdown says its drain in milliseconds, and nothing traps
        """
    )
    func farDeadlines() async throws {
        let handler = RecordingLogHandler(minimumLevel: .notice)
        let bed = try TestBed { $0.logHandler = handler }
        let enricher = try Enricher(configuration: bed.configuration)
        for far in [Duration.seconds(Int64.max), .seconds(10_000_000_000_000_000)] {
            let result = await enricher.enrich(
                TestBed.adobePayload(bed.url("/media/photo.jpg?far=\(far.components.seconds)")), deadline: .now + far)
            #expect(result.outcome == .complete, "\(result.problems)")
        }
        await enricher.shutdown(drainTimeout: .seconds(Int64.max))
        let began = try #require(handler.recorded.first { $0.name == .shutdownBegan })
        // The drain as it stood when the shutdown began: a day, less the moment it took to get there.
        let drain = try #require(Int(began.metadata["drain_ms"] ?? ""))
        #expect((86_399_000...86_400_000).contains(drain))
        #expect(handler.recorded.last?.metadata["drained"] == "true")
    }

    @Test("a publication that failed is a warning naming the attachment and why")
    func publishFailed() async throws {
        let handler = RecordingLogHandler(minimumLevel: .warning)
        let bed = try bed(handler, publisher: RefusingPublisher())
        let url = bed.url("/media/photo.jpg")
        let result = try await withEnricher(bed.configuration) { enricher in
            await enricher.enrich(TestBed.adobePayload(url), timeout: .seconds(30))
        }
        #expect(result.outcome == .complete)
        #expect(handler.names == [.publishFailed])
        #expect(
            handler.recorded.first?.metadata == ["url": url, "detail": "the store is full", "code": "QuotaExceeded"])
        #expect(handler.recorded.first?.level == .warning)
    }

    @Test("below the handler's level nothing is built; each name has one level")
    func levels() async throws {
        let handler = RecordingLogHandler(minimumLevel: .warning)
        let bed = try bed(handler)
        _ = try await withEnricher(bed.configuration) { enricher in
            await enricher.enrich(
                TestBed.adobePayload(bed.url("/fail-first/1/503/photo.jpg")), timeout: .seconds(30))
        }
        #expect(handler.recorded.isEmpty)
        #expect(
            Dictionary(uniqueKeysWithValues: Enricher.LogEvent.Name.allCases.map { ($0, $0.level) }) == [
                .payloadFinished: .debug, .retry: .info, .shutdownBegan: .notice, .shutdownFinished: .notice,
                .publishFailed: .warning,
            ])
    }

    @Test("the service extension's deliveries are reported as payloads too, an expired one included")
    func extensionDelivery() async throws {
        let handler = RecordingLogHandler(minimumLevel: .debug)
        let bed = try bed(handler)
        try await withEnricher(bed.configuration) { enricher in
            let service = MediaServiceExtension(enricher: enricher)
            let delivered = LockedValue<[EnrichmentResult]>([])
            service.didReceive(TestBed.adobePayload(bed.url("/media/photo.jpg"))) { result in
                delivered.withLock { $0.append(result) }
            }
            await service.settle()
            service.didReceive(TestBed.adobePayload(bed.url("/stall"))) { result in
                delivered.withLock { $0.append(result) }
            }
            try await waitUntil("the origin receives /stall", within: .seconds(30)) {
                bed.origin.requestLog.contains("/stall")
            }
            service.serviceExtensionTimeWillExpire()
            await service.settle()
            #expect(delivered.withLock { $0.map(\.outcome) } == [.complete, .expired])
        }
        let finished = handler.recorded.filter { $0.name == .payloadFinished }
        #expect(finished.map { $0.metadata["outcome"] } == ["complete", "expired"])
    }
}
