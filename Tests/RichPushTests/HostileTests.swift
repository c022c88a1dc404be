import FixtureOrigin
import Foundation
import Testing

@testable import RichPush
@testable import RichPushStore

/// A listener on 127.0.0.2, an address every test configuration refuses. Tests aim hostile URLs at it and check
/// that it has never seen a connection: the count is shared and never reset, so each check covers every test
/// that ran before it.
let decoy = try! HTTPOrigin(host: "127.0.0.2", handler: { _ in .init(body: .bytes(fixture("photo.jpg"))) })

@Suite("Hostile URLs: the fetcher cannot be turned against its network")
struct HostileURLTests {
    func failure(_ url: String, _ bed: TestBed) async throws -> FetchFailure? {
        try await withFetcher(bed.configuration) { fetcher in
            if case .failure(let failure) = await fetcher.fetch(url, timeout: .seconds(5)) { return failure }
            return nil
        }
    }

    @Test(
        "every spelling of a refused address is refused where the connection is made",
        arguments: [
            "127.0.0.2", "2130706434", "0x7f000002", "0177.0.0.2", "127.2", "[::ffff:127.0.0.2]", "[::ffff:7f00:2]",
        ])
    func spellings(host: String) async throws {
        let bed = try TestBed()
        let failure = try await failure("http://\(host):\(decoy.port)/photo.jpg", bed)
        #expect(failure?.code == .blockedAddress || failure?.code == .badURL, "\(host): \(String(describing: failure))")
        #expect(decoy.connectionCount == 0)
    }

    @Test(
        "with the default policy, loopback in any spelling is refused and never connected",
        arguments: ["127.0.0.1", "2130706433", "0x7f000001", "0177.0.0.1", "127.1", "[::ffff:127.0.0.1]", "localhost"])
    func defaultPolicy(host: String) async throws {
        let bed = try TestBed { $0.network.addressPolicy = AddressPolicy() }
        let failure = try await failure("http://\(host):\(bed.origin.port)/media/photo.jpg", bed)
        #expect(failure?.code == .blockedAddress || failure?.code == .badURL || failure?.code == .network)
        #expect(bed.origin.connectionCount == 0)
    }

    /// A bed, and a listener on 127.0.0.2 at its origin's port. Another test's socket may hold that port on
    /// 127.0.0.2 (its clients bind 127.0.0.2 to an ephemeral port, and its listeners there take one), which once
    /// failed a full run with "address already in use": a new bed, on another port, is tried then, 8 at most.
    static func bedWithDecoyOnItsPort() throws -> (TestBed, HTTPOrigin) {
        var refusal: (any Error)?
        for _ in 0..<8 {
            let bed = try TestBed()
            do {
                let refused = try HTTPOrigin(
                    host: "127.0.0.2", port: bed.origin.port, handler: { _ in .init(status: 500) })
                return (bed, refused)
            } catch {
                refusal = error
            }
        }
        throw refusal!
    }

    @Test("a name resolving to a refused and an allowed address connects only to the allowed one")
    func severalAddresses() async throws {
        // A second decoy on the refused 127.0.0.2, on the same port as the allowed origin.
        let (bed, sameport) = try Self.bedWithDecoyOnItsPort()
        defer { sameport.stop() }
        var configuration = bed.configuration
        configuration.network.resolve = ["multi.test:\(bed.origin.port):127.0.0.2,127.0.0.1"]
        try await withFetcher(configuration) { fetcher in
            for _ in 0..<3 {
                let media = try await fetcher.fetch(
                    "http://multi.test:\(bed.origin.port)/media/photo.jpg", timeout: .seconds(5)
                ).get()
                #expect(media.type == .jpeg)
            }
            #expect(sameport.connectionCount == 0)
            #expect(bed.origin.connectionCount >= 1)
        }
    }

    @Test(
        "a redirect to a refused address is refused",
        arguments: [
            "http://127.0.0.2:PORT/photo.jpg", "http://169.254.169.254/latest/meta-data/", "http://[::1]:PORT/x",
            "http://0.0.0.0:PORT/x", "http://10.0.0.5/x",
        ])
    func redirectToRefused(target: String) async throws {
        let bed = try TestBed()
        let url = target.replacingOccurrences(of: "PORT", with: String(decoy.port))
        let failure = try await failure(
            bed.url("/redirect-to?url=" + url.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!), bed)
        #expect(failure?.code == .blockedAddress)
        #expect(decoy.connectionCount == 0)
    }

    @Test("ports outside the allowed list are refused, in the URL and after a redirect")
    func ports() async throws {
        let bed = try TestBed { $0.network.allowedPorts = [80...80, 443...443] }
        let direct = try await failure(bed.url("/media/photo.jpg"), bed)
        #expect(direct?.code == .blockedPort)
        #expect(bed.origin.connectionCount == 0)
        // A name on an allowed port that redirects to a refused one: judged at the connection.
        let open = try TestBed { $0.network.allowedPorts = [] }
        var configuration = open.configuration
        configuration.network.allowedPorts = [open.origin.port...open.origin.port]
        configuration.network.resolve.append("media.test:\(decoy.port):127.0.0.1")
        try await withFetcher(configuration) { fetcher in
            let target = "http://media.test:\(decoy.port)/photo.jpg".addingPercentEncoding(
                withAllowedCharacters: .alphanumerics)!
            let result = await fetcher.fetch(open.url("/redirect-to?url=\(target)"), timeout: .seconds(5))
            guard case .failure(let redirected) = result else {
                Issue.record("expected a refusal, got \(result)")
                return
            }
            #expect(redirected.code == .blockedPort || redirected.code == .blockedAddress)
            #expect(decoy.connectionCount == 0)
        }
    }
}

@Suite("Hostile servers: each ends within its bound, with its code, leaving nothing")
struct HostileServerTests {
    static let cases: [(path: String, code: EnrichmentProblem.Code)] = [
        ("/silence", .timeout),
        ("/stall", .timeout),
        ("/drip/photo.jpg?bytes=1&ms=1000", .timeout),
        ("/generated?prefix=photo.jpg&bytes=60000000&nolength=1", .tooLarge),
        ("/generated?prefix=clip.mp4&bytes=1000&declare=900000000", .tooLarge),
        ("/generated?prefix=photo.jpg&bytes=10000&declare=20000", .badResponse),
        ("/media/bomb.gz?type=image/jpeg&encoding=gzip", .unsupportedType),
        ("/media/bomb.gz?type=image/png&encoding=br", .unsupportedType),
        ("/empty", .emptyBody),
        ("/status/503?file=photo.jpg", .httpStatus),
        ("/partial/photo.jpg", .httpStatus),
        ("/redirect-loop", .tooManyRedirects),
        ("/no-location", .httpStatus),
        ("/huge-headers?kb=300", .badResponse),
        ("/media/error-page.html?type=image/jpeg", .unsupportedType),
        ("/as/icon.jpg?file=icon.svg&type=image/jpeg", .unsupportedType),
        ("/as/polyglot.jpg?file=polyglot.html&type=image/jpeg", .unsupportedType),
    ]

    @Test("all at once, beside a good payload that is not slowed down")
    func allAtOnce() async throws {
        // The stalling servers are cut by the low-speed window; the good payload must be done before it. 8 s: in
        // full runs on a loaded two-core machine the good payload took up to 5.9 s (a loopback fetch, queued behind
        // the whole suite's start), against 0.2 s alone; a good payload held behind the stalls would take 8 s.
        let window = Duration.seconds(8)
        let bed = try TestBed { $0.network.lowSpeedWindow = window }
        try await withEnricher(bed.configuration) { enricher in
            let start = ContinuousClock.now
            let goodPayload = try bed.fixturePayload("two-conventions.json")
            let hostilePayloads = try Self.cases.map {
                try bed.payload(#"{"aps":{"mutable-content":1},"adb_media":"ORIGIN\#($0.path)"}"#)
            }
            let results = await withTaskGroup(of: (Int, EnrichmentResult, Duration).self) { group in
                for (index, payload) in hostilePayloads.enumerated() {
                    group.addTask { (index, await enricher.enrich(payload, timeout: .seconds(30)), .now - start) }
                }
                group.addTask { (-1, await enricher.enrich(goodPayload, timeout: .seconds(30)), .now - start) }
                var collected: [Int: (EnrichmentResult, Duration)] = [:]
                for await (index, result, elapsed) in group { collected[index] = (result, elapsed) }
                return collected
            }
            let good = try #require(results[-1])
            #expect(good.0.outcome == .complete)
            // The stalling servers cannot end before the low-speed window; the good payload must not wait for them.
            let stalls = Self.cases.indices.filter { Self.cases[$0].code == .timeout }.compactMap { results[$0]?.1 }
            #expect(stalls.allSatisfy { $0 >= window })
            #expect(good.1 < stalls.min()!, "the good payload took \(good.1) among hostile ones")
            for (index, hostile) in Self.cases.enumerated() {
                let result = try #require(results[index]?.0)
                #expect(result.outcome == .failed, "\(hostile.path): \(result.outcome) \(result.problems)")
                #expect(result.problems.map(\.code) == [hostile.code], "\(hostile.path): \(result.problems)")
            }
            // Each ended by its own bound, not the payloads' 30 s deadline: that would have been `expired`, which the
            // codes above exclude.
            // Only the good payload's two attachments remain.
            #expect(bed.filesOnDisk().count == 2, "\(bed.filesOnDisk())")
            #expect(!bed.filesOnDisk().contains { $0.hasSuffix(".partial") })
        }
    }

    @Test("a body longer than its Content-Length is cut at the declared length")
    func longerThanDeclared() async throws {
        let bed = try TestBed()
        try await withFetcher(bed.configuration) { fetcher in
            let media = try await fetcher.fetch(
                bed.url("/generated?prefix=photo.jpg&bytes=20000&declare=10000"), timeout: .seconds(5)
            ).get()
            #expect(media.bytes == 10000)
        }
    }

    /// libcurl 7.88 reads a body no further than its Content-Length and reuses the connection with the rest still
    /// on it, to be read as the next response (`Transfer.isUnclean(_:)`). The body is longer than curl's buffer
    /// (16 KB), so that the bytes beyond it are not in the read that ends it (curl would close the connection then).
    @Test(
        "a response longer than its Content-Length, kept alive, does not spoil the next fetch from the origin",
        arguments: [64, 100_000])
    func excessThenNextFetch(excess: Int) async throws {
        let bed = try TestBed()
        try await withFetcher(bed.configuration) { fetcher in
            let first = try await fetcher.fetch(
                bed.url("/generated?prefix=photo.jpg&bytes=40000&excess=\(excess)"), timeout: .seconds(5)
            ).get()
            #expect(first.bytes == 40000)
            let second = await fetcher.fetch(bed.url("/media/photo.jpg"), timeout: .seconds(5))
            #expect(try second.get().type == .jpeg, "\(second)")
            // The spoilt connection was not reused: the second fetch opened another...
            #expect(bed.origin.connectionCount == 2)
            // ...which the next one reuses: a clean connection is not given up.
            _ = try await fetcher.fetch(bed.url("/media/photo.jpg"), timeout: .seconds(5)).get()
            #expect(bed.origin.connectionCount == 2)
        }
    }

    /// The excess of a response may come after the next request went out on the reused connection (the origin wrote
    /// it late, or the check of the connection ran before it came): the next response then starts with it. That
    /// request is made again on a new connection, once: garbage there too is bad-response.
    @Test("excess that comes after the next request went out: that request made again on a new connection, once")
    func lateExcessThenNextFetch() async throws {
        let bed = try TestBed()
        try await withFetcher(bed.configuration) { fetcher in
            let first = try await fetcher.fetch(
                bed.url("/generated?prefix=photo.jpg&bytes=40000&late-excess=64"), timeout: .seconds(5)
            ).get()
            #expect(first.bytes == 40000)
            let second = await fetcher.fetch(bed.url("/media/photo.jpg?after=1"), timeout: .seconds(5))
            #expect(try second.get().type == .jpeg, "\(second)")
            #expect(bed.origin.connectionCount == 2)
            #expect(bed.origin.exchanges.filter { $0.target == "/media/photo.jpg?after=1" }.count == 2)
        }
        // An origin whose answer to the request made again is no HTTP either.
        let seen = LockedValue(0)
        let photo = fixture("photo.jpg")
        let origin = try HTTPOrigin { request in
            if request.path == "/first" {
                return HTTPOrigin.Response(
                    headers: [("Content-Type", "image/jpeg")], body: .bytes(photo), lateExcess: [0x78])
            }
            let count = seen.withLock { value -> Int in
                value += 1
                return value
            }
            // The first answer is spoilt by the late excess; the second, on a new connection, is not HTTP.
            return count == 1
                ? HTTPOrigin.Response(headers: [("Content-Type", "image/jpeg")], body: .bytes(photo))
                : HTTPOrigin.Response(body: .raw(Array("no status line\r\n\r\n".utf8)))
        }
        defer { origin.stop() }
        try await withFetcher(bed.configuration) { fetcher in
            _ = try await fetcher.fetch(origin.url("/first"), timeout: .seconds(5)).get()
            let result = await fetcher.fetch(origin.url("/second"), timeout: .seconds(5))
            guard case .failure(let failure) = result else {
                Issue.record("garbage on the new connection too was taken: \(result)")
                return
            }
            #expect(failure.code == .badResponse, "\(failure)")
            #expect(seen.withLock { $0 } == 2, "made twice, not more")
        }
    }
}

@Suite("The disk", .serialized)
struct DiskTests {
    /// 2,000,000 bytes are written as they arrive; 600,000, within the memory allowed (1 MiB), are held whole, then
    /// written with one write by the fetching task.
    @Test(
        "a full disk (ENOSPC) gives store-failed and leaves no partial file, the body written as it arrives or held",
        .enabled(if: canMountTmpfs), arguments: [2_000_000, 600_000])
    func diskFull(bytes: Int) async throws {
        try await withTmpfs(size: "256k") { point in
            let bed = try TestBed { $0.store = AttachmentStore(root: point + "/attachments") }
            try await withFetcher(bed.configuration) { fetcher in
                let result = await fetcher.fetch(
                    bed.url("/generated?prefix=photo.jpg&bytes=\(bytes)"), timeout: .seconds(5))
                guard case .failure(let failure) = result else {
                    Issue.record("expected store-failed, got \(result)")
                    return
                }
                #expect(failure.code == .storeFailed)
                #expect(failure.detail.contains("No space left"), "\(failure.detail)")
                #expect(fetcher.heldBodyBytes == 0)
                // Spares made ahead (`.spare-<uuid>`, empty) are no transfer's: they are removed at shutdown, below.
                let left = entriesBelow(point + "/attachments").filter { !$0.hasPrefix(AttachmentRoot.sparePrefix) }
                #expect(left.isEmpty, "left behind: \(left)")
                // The disk is usable again for a small file: nothing of the failed one holds space.
                let small = try await fetcher.fetch(bed.url("/media/photo.jpg"), timeout: .seconds(5)).get()
                #expect(small.type == .jpeg)
            }
            let spares = entries(point + "/attachments").filter { $0.hasPrefix(AttachmentRoot.sparePrefix) }
            #expect(spares.isEmpty, "spares left after shutdown: \(spares)")
        }
    }

    @Test("an attachments root removed during a transfer gives store-failed")
    func vanishedRoot() async throws {
        // Every body written as it arrives: the partial file is there to see.
        let bed = try TestBed { $0.limits.heldBodyBytes = 0 }
        try await withFetcher(bed.configuration) { fetcher in
            let task = Task { await fetcher.fetch(bed.url("/drip/photo.jpg?bytes=1000&ms=100"), timeout: .seconds(10)) }
            try await waitUntil("the transfer to write its partial file") { !bed.filesOnDisk().isEmpty }
            try await Self.removeRoot(of: bed, expectingStoreFailed: task)
        }
    }

    @Test("an attachments root removed while a body is held in memory gives store-failed when it is stored")
    func vanishedRootHeld() async throws {
        let bed = try TestBed()
        try await withFetcher(bed.configuration) { fetcher in
            let task = Task { await fetcher.fetch(bed.url("/drip/photo.jpg?bytes=1000&ms=100"), timeout: .seconds(10)) }
            try await waitUntil("the body to be held in memory") { fetcher.heldBodyBytes > 0 }
            #expect(bed.filesOnDisk().filter { !$0.contains(AttachmentRoot.sparePrefix) }.isEmpty)
            try await Self.removeRoot(of: bed, expectingStoreFailed: task)
            #expect(fetcher.heldBodyBytes == 0, "the held body let go of")
        }
    }

    /// Removes `bed`'s attachments root while `task` fetches, and expects the fetch to end `store-failed`.
    private static func removeRoot(
        of bed: TestBed, expectingStoreFailed task: Task<Result<FetchedMedia, FetchFailure>, Never>
    ) async throws {
        // The spares' maker may be adding a directory while the tree is removed (rm -rf races mkdir): again until
        // the root is gone; then the maker's mkdirat fails too and it stops.
        try await waitUntil("the root removed") {
            (try? FileManager.default.removeItem(atPath: bed.attachments)) != nil
                || !FileManager.default.fileExists(atPath: bed.attachments)
        }
        let result = await task.value
        guard case .failure(let failure) = result else {
            Issue.record("expected store-failed, got \(result)")
            return
        }
        #expect(failure.code == .storeFailed)
        #expect(!FileManager.default.fileExists(atPath: bed.attachments))
    }
}
