import Foundation
import Testing

@testable import RichPush

@Suite("MediaServiceExtension: expiry closes the run")
struct ExtensionTests {
    /// A OneSignal payload with `count` attachments, each URL unique to `run` (no cache hit across runs).
    static func payload(_ bed: TestBed, run: Int, count: Int) throws -> PushPayload {
        let files = ["photo.jpg", "logo.png", "anim.gif"]
        let members = (0..<count).map { index in
            #""a\#(index)":"\#(bed.url("/media/\(files[index % files.count])?run=\(run)&n=\(index)"))""#
        }
        let text = #"{"aps":{"alert":"hi","mutable-content":1},"att":{\#(members.joined(separator: ","))}}"#
        return try PushPayload(parsing: Array(text.utf8))
    }

    @Test("expiry racing the transfers: every stored file is named by the delivered result (60 runs)")
    func expiryLeavesNoOrphan() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let service = MediaServiceExtension(enricher: enricher)
            // One run left alone measures how long a run takes here, now: expiries are spread over twice that.
            let start = ContinuousClock.now
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                service.didReceive(try! Self.payload(bed, run: -1, count: 8)) { _ in continuation.resume() }
            }
            // Capped: on a loaded machine a first run can take seconds, and 60 waits of twice that would too.
            let span = min(max(ContinuousClock.now - start, .milliseconds(2)), .milliseconds(150))
            await service.settle()
            try Self.clear(bed)
            var random = SplitMix64(seed: 9)
            var orphans: [String] = []
            for run in 0..<60 {
                let delivered = LockedValue<[EnrichmentResult]>([])
                service.didReceive(try Self.payload(bed, run: run, count: 8), deadline: .now + .seconds(30)) { result in
                    delivered.withLock { $0.append(result) }
                }
                let wait = span * 2 * Double(UInt64.random(in: 0...1000, using: &random)) / 1000
                try await Task.sleep(until: .now + wait, clock: .continuous)
                service.serviceExtensionTimeWillExpire()
                // Every transfer of the run has settled, and a late one has had its chance to store a file.
                await service.settle()
                let results = delivered.withLock { $0 }
                try #require(results.count == 1, "run \(run): delivered \(results.count) times")
                let named = Set(
                    results[0].attachments.map { String($0.media.path.dropFirst(bed.attachments.count + 1)) })
                for file in bed.filesOnDisk() where !named.contains(file) { orphans.append("run \(run): \(file)") }
                for path in named { #expect(FileManager.default.fileExists(atPath: bed.attachments + "/" + path)) }
                try Self.clear(bed)
            }
            #expect(orphans.isEmpty, "files no delivered result names: \(orphans)")
        }
    }

    @Test("after shutdown began, didReceive delivers cancelled at once")
    func refusedAfterShutdown() async throws {
        let bed = try TestBed()
        let enricher = try Enricher(configuration: bed.configuration)
        await enricher.shutdown()
        let service = MediaServiceExtension(enricher: enricher)
        let delivered = LockedValue<[EnrichmentResult.Outcome]>([])
        service.didReceive(try Self.payload(bed, run: 0, count: 2)) { result in
            delivered.withLock { $0.append(result.outcome) }
        }
        // Delivered before didReceive returned, and nothing was fetched.
        #expect(delivered.withLock { $0 } == [.cancelled])
        #expect(bed.origin.requestLog.isEmpty)
    }

    /// Removes every attachment directory (the media cache's own links stay).
    static func clear(_ bed: TestBed) throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: bed.attachments)
        where !name.hasPrefix(".cache-") {
            try FileManager.default.removeItem(atPath: bed.attachments + "/" + name)
        }
    }
}
