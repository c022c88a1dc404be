import FixtureOrigin
import Foundation
import Testing

@testable import RichPush

@Suite("Media cache: single flight, time to live, revalidation")
struct MediaCacheTests {
    func payload(_ bed: TestBed, _ path: String) throws -> PushPayload {
        try bed.payload(#"{"aps":{"mutable-content":1},"adb_media":"ORIGIN\#(path)"}"#)
    }

    func requests(_ bed: TestBed, _ path: String) -> Int {
        bed.origin.requestLog.filter { $0.hasPrefix(path) }.count
    }

    /// Waits until the origin has seen a request for `path` (the first payload is then the leader); fails the
    /// test if it never does.
    func untilRequested(
        _ bed: TestBed, _ path: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        try await waitUntil("the origin to receive a request for \(path)", sourceLocation: sourceLocation) {
            requests(bed, path) > 0
        }
    }

    @Test("20 payloads with one URL in flight: one request, 20 attachments, each its own directory and link")
    func singleFlight() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let payload = try payload(bed, "/slow/photo.jpg?ms=300")
            let results = await withTaskGroup(of: EnrichmentResult.self) { group in
                for _ in 0..<20 { group.addTask { await enricher.enrich(payload, timeout: .seconds(10)) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.allSatisfy { $0.outcome == .complete })
            #expect(requests(bed, "/slow/photo.jpg") == 1)
            let media = results.map { $0.attachments[0].media }
            #expect(Set(media.map(\.directory)).count == 20)
            #expect(Set(media.map(\.path)).count == 20)
            let hash = try await sha256sum(media[0].path)
            #expect(Set(media.map(\.sha256)) == [hash])
            for item in media {
                #expect(Array(FileManager.default.contents(atPath: item.path)!) == fixture("photo.jpg"))
            }
            // Hard links to one inode: the bytes are stored once.
            #expect(Set(try media.map { try inode($0.path) }).count == 1)
            #expect(bed.cacheFiles().count == 1)
        }
    }

    @Test("within the time to live no request is made: the second payload links the cached bytes")
    func withinTimeToLive() async throws {
        // A time to live no loaded machine outlasts between two payloads.
        let bed = try TestBed { $0.cache.timeToLive = .seconds(600) }
        try await withEnricher(bed.configuration) { enricher in
            let payload = try payload(bed, "/media/logo.png")
            let first = await enricher.enrich(payload, timeout: .seconds(10))
            let second = await enricher.enrich(payload, timeout: .seconds(10))
            #expect(first.outcome == .complete && second.outcome == .complete)
            #expect(requests(bed, "/media/logo.png") == 1)
            let paths = [first, second].compactMap { $0.attachments.first?.media.path }
            try #require(paths.count == 2)
            #expect(paths[0] != paths[1])
            #expect(try inode(paths[0]) == inode(paths[1]))
        }
    }

    @Test(
        "once stale, the request is conditional on the validator the origin sent, and its 304 reuses the bytes",
        arguments: [
            ("/media/logo.png", "etag", "if-none-match"),
            ("/dated/logo.png", "last-modified", "if-modified-since"),
        ])
    func revalidation(path: String, validator: String, condition: String) async throws {
        // Stale as soon as it is stored: the second payload must revalidate, whatever the machine's load.
        let bed = try TestBed { $0.cache.timeToLive = .nanoseconds(1) }
        try await withEnricher(bed.configuration) { enricher in
            let payload = try payload(bed, path)
            let first = await enricher.enrich(payload, timeout: .seconds(10))
            let second = await enricher.enrich(payload, timeout: .seconds(10))
            #expect(first.outcome == .complete && second.outcome == .complete)
            let exchanges = bed.origin.exchanges.filter { $0.target == path }
            try #require(exchanges.count == 2, "requests for \(path): \(exchanges.map { ($0.headers, $0.status) })")
            let sent = try #require(exchanges[0].responseHeaders[validator], "the origin sent no \(validator)")
            #expect(exchanges[0].headers[condition] == nil, "the first request must be unconditional")
            #expect(exchanges[0].status == 200)
            #expect(exchanges[1].headers[condition] == sent, "the revalidation's \(condition)")
            #expect(exchanges[1].status == 304)
            // The 304 reused the cached file: the second attachment is a link to the first's bytes, not a new file.
            let paths = [first, second].compactMap { $0.attachments.first?.media.path }
            try #require(paths.count == 2)
            #expect(try inode(paths[0]) == inode(paths[1]))
            #expect(second.attachments.first?.media.sha256 == first.attachments.first?.media.sha256)
            #expect(Array(FileManager.default.contents(atPath: paths[1])!) == fixture("logo.png"))
            #expect(bed.cacheFiles().count == 1)
        }
    }

    @Test(
        """
        a revalidation the origin fails for now (a 503) serves the copy the cache had, which stays with its validator: \
        the next revalidation is conditional again and its 304 reuses it
        """)
    func staleIfError() async throws {
        // Stale as soon as it is stored: every later payload revalidates, whatever the machine's load.
        let bed = try TestBed { $0.cache.timeToLive = .nanoseconds(1) }
        try await withEnricher(bed.configuration) { enricher in
            let path = "/fail-after/1/503/logo.png"
            let payload = try payload(bed, path)
            var results: [EnrichmentResult] = []
            for _ in 0..<3 { results.append(await enricher.enrich(payload, timeout: .seconds(10))) }
            #expect(results.map(\.outcome) == [.complete, .complete, .complete], "\(results.map(\.problems))")
            for result in results {
                #expect(
                    Array(FileManager.default.contents(atPath: result.attachments[0].media.path)!)
                        == fixture("logo.png"))
            }
            let exchanges = bed.origin.exchanges.filter { $0.target == path }
            #expect(exchanges.map(\.status) == [200, 503, 304])
            #expect(exchanges.count == 3 && exchanges[2].headers["if-none-match"] != nil)
        }
    }

    @Test(
        """
        a revalidation cut by its payload's deadline (the origin stalls) leaves the copy the cache had, with its \
        validator: the next revalidation is conditional and its 304 reuses it
        """)
    func revalidationExpired() async throws {
        let bed = try TestBed { $0.cache.timeToLive = .nanoseconds(1) }
        try await withEnricher(bed.configuration) { enricher in
            let path = "/fail-after/1/0/logo.png"
            let payload = try payload(bed, path)
            #expect(await enricher.enrich(payload, timeout: .seconds(10)).outcome == .complete)
            // Not a timing test: the stalled revalidation ends at this deadline, whenever that is.
            #expect(await enricher.enrich(payload, timeout: .milliseconds(500)).outcome == .expired)
            let third = await enricher.enrich(payload, timeout: .seconds(10))
            #expect(third.outcome == .complete)
            let exchanges = bed.origin.exchanges.filter { $0.target == path }
            #expect(exchanges.count == 3 && exchanges[2].headers["if-none-match"] != nil, "\(exchanges.map(\.headers))")
            #expect(exchanges.last?.status == 304)
        }
    }

    @Test(
        "a 304 carrying a new ETag replaces the stored one: the next revalidation sends it, and is answered 304 again")
    func revalidationUpdatesValidators() async throws {
        let bed = try TestBed { $0.cache.timeToLive = .nanoseconds(1) }
        try await withEnricher(bed.configuration) { enricher in
            let path = "/rotating-etag/logo.png"
            let payload = try payload(bed, path)
            for _ in 0..<3 { #expect(await enricher.enrich(payload, timeout: .seconds(10)).outcome == .complete) }
            let exchanges = bed.origin.exchanges.filter { $0.target == path }
            #expect(exchanges.map(\.status) == [200, 304, 304])
            #expect(exchanges.map { $0.headers["if-none-match"] } == [nil, "\"v1\"", "\"v2\""])
        }
    }

    @Test("a waiter whose deadline is earlier than the fetch's returns expired at its own deadline")
    func waiterDeadline() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            // The leader's fetch takes 5 s, so that it is still in flight when the waiter comes even on a machine
            // loaded enough to delay the waiter by seconds (seen: 1.5 s was not enough at load 5).
            let payload = try payload(bed, "/slow/photo.jpg?ms=5000")
            async let leader = enricher.enrich(payload, timeout: .seconds(20))
            try await untilRequested(bed, "/slow/photo.jpg")
            let deadline = ContinuousClock.now + .milliseconds(300)
            let control = DeadlineControl(at: deadline)
            let waiter = await enricher.enrich(payload, deadline: deadline)
            let returned = ContinuousClock.now
            #expect(waiter.outcome == .expired)
            #expect(waiter.problems.first?.detail == "the deadline came while the same URL was being fetched")
            #expect(returned >= deadline - .milliseconds(50), "returned \(deadline - returned) before its deadline")
            await control.expectOnTime(returned)
            #expect(await leader.outcome == .complete)
            #expect(requests(bed, "/slow/photo.jpg") == 1)
        }
    }

    @Test("when the fetch expires under its own deadline, a waiter with more time fetches again")
    func leaderExpires() async throws {
        // The leader's fetch stalls, and no low-speed rule ends it: only its deadline does. The waiter's own fetch
        // is answered at once.
        let bed = try TestBed { $0.network.lowSpeedWindow = .seconds(600) }
        try await withEnricher(bed.configuration) { enricher in
            // The leader's deadline must outlast sending its request and the waiter's arrival, which take about what
            // a small fetch takes: scaled from one measured now, so that a loaded machine lengthens it instead of
            // failing the test.
            let unit = try await fetchOnce("/media/logo.png?baseline", through: enricher, on: bed)
            let leaderTimeout = max(.milliseconds(500), unit * 3)
            let payload = try payload(bed, "/stall-first/photo.jpg")
            let leaderDeadline = ContinuousClock.now + leaderTimeout
            async let leader = enricher.enrich(payload, deadline: leaderDeadline)
            try await untilRequested(bed, "/stall-first/photo.jpg")
            let waiterStart = ContinuousClock.now
            let waiter = await enricher.enrich(payload, timeout: leaderTimeout + .seconds(10))
            #expect(
                waiterStart < leaderDeadline, "the waiter came after the leader expired: it had nothing to wait for")
            #expect(await leader.outcome == .expired)
            #expect(waiter.outcome == .complete, "\(waiter.problems)")
            // The waiter waited for the leader, then fetched again: a second request, sent only once the leader's
            // deadline had passed (a waiter that did not wait would have sent it at once).
            let received = bed.origin.exchanges.filter { $0.target == "/stall-first/photo.jpg" }.map(\.received)
            try #require(received.count == 2, "requests: \(bed.origin.requestLog)")
            #expect(
                received[1] >= leaderDeadline - .milliseconds(5), "fetched again \(leaderDeadline - received[1]) early")
        }
    }

    @Test(
        """
        leaders expiring one after another under staggered deadlines: every fetch made is counted a miss, the \
        fetches apart from the cache included; a lookup past its deadline fetches nothing and counts nothing
        """
    )
    func missesCountFetches() async throws {
        let bed = try TestBed { $0.network.lowSpeedWindow = .seconds(600) }
        try await withEnricher(bed.configuration) { enricher in
            let payload = try payload(bed, "/slow/photo.jpg?ms=3000")
            let start = ContinuousClock.now
            // Every deadline is shorter than the origin takes: each leader expires, its waiters lead in turn, and
            // a waiter told to retry three times fetches apart from the cache.
            let results = await withTaskGroup(of: EnrichmentResult.self) { group in
                for index in 0..<24 {
                    let deadline = start + .milliseconds(300 + 20 * index)
                    group.addTask { await enricher.enrich(payload, deadline: deadline) }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.allSatisfy { $0.outcome == .expired })
            let fetched = requests(bed, "/slow/photo.jpg")
            let counted = enricher.statistics.cacheMisses
            #expect(fetched > 1)
            // A leader that expired before its request reached the origin is a miss the origin never saw.
            #expect(counted >= fetched, "\(counted) misses counted for \(fetched) requests")
            let late = await enricher.enrich(payload, deadline: .now - .seconds(1))
            #expect(late.outcome == .expired)
            #expect(enricher.statistics.cacheMisses == counted)
            #expect(requests(bed, "/slow/photo.jpg") == fetched)
        }
    }

    @Test("failures are not cached")
    func failuresNotCached() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            // A 500: not retried (see RetryTests), so each payload makes one request.
            let payload = try payload(bed, "/status/500")
            _ = await enricher.enrich(payload, timeout: .seconds(5))
            let again = await enricher.enrich(payload, timeout: .seconds(5))
            #expect(again.problems.map(\.code) == [.httpStatus])
            #expect(requests(bed, "/status/500") == 2)
            #expect(bed.cacheFiles().isEmpty)
        }
    }

    @Test("the entry bound evicts the least recently used, and its file")
    func eviction() async throws {
        let bed = try TestBed { $0.cache.maximumEntries = 1 }
        try await withEnricher(bed.configuration) { enricher in
            // Each asked twice: the second gives the entry its cache link.
            for path in ["/media/logo.png", "/media/logo.png", "/media/photo.jpg"] {
                _ = await enricher.enrich(try payload(bed, path), timeout: .seconds(5))
            }
            // The photo's entry evicted the logo's, and its link went with it; the photo, seen once, has none.
            #expect(bed.cacheFiles().isEmpty)
            _ = await enricher.enrich(try payload(bed, "/media/photo.jpg"), timeout: .seconds(5))
            #expect(requests(bed, "/media/photo.jpg") == 1)
            #expect(bed.cacheFiles().count == 1)
            #expect(bed.cacheFiles().first?.hasSuffix(".jpg") == true)
            _ = await enricher.enrich(try payload(bed, "/media/logo.png"), timeout: .seconds(5))
            #expect(requests(bed, "/media/logo.png") == 2)
        }
    }

    @Test("a cached file removed from disk (gc) is fetched again; shutdown removes the cache directory")
    func cacheFileRemoved() async throws {
        let bed = try TestBed()
        let enricher = try Enricher(configuration: bed.configuration)
        let payload = try payload(bed, "/media/logo.png")
        // Asked twice: the cache has its own link.
        for _ in 0..<2 { _ = await enricher.enrich(payload, timeout: .seconds(5)) }
        try #require(bed.cacheFiles().count == 1)
        for file in bed.cacheFiles() { try FileManager.default.removeItem(atPath: bed.attachments + "/" + file) }
        let again = await enricher.enrich(payload, timeout: .seconds(5))
        #expect(again.outcome == .complete)
        #expect(requests(bed, "/media/logo.png") == 2)
        // Fetched again, and linked at once (the URL was seen before); the next payload is a hit.
        #expect(bed.cacheFiles().count == 1)
        _ = await enricher.enrich(payload, timeout: .seconds(5))
        #expect(requests(bed, "/media/logo.png") == 2)
        #expect(bed.cacheFiles().count == 1)
        await enricher.shutdown()
        #expect(bed.cacheFiles().isEmpty)
        #expect(
            !(try FileManager.default.contentsOfDirectory(atPath: bed.attachments)).contains { $0.hasPrefix(".cache-") }
        )
        // The attachments handed out keep their bytes.
        #expect(Array(FileManager.default.contents(atPath: again.attachments[0].media.path)!) == fixture("logo.png"))
    }

    @Test("hits' directories made ahead: after shutdown each payload's attachment, whole, and nothing else")
    func hitsLeaveOnlyAttachments() async throws {
        let bed = try TestBed()
        let enricher = try Enricher(configuration: bed.configuration)
        let payload = try payload(bed, "/media/logo.png")
        var media: [FetchedMedia] = []
        for _ in 0..<2 { media += await enricher.enrich(payload, timeout: .seconds(5)).attachments.map(\.media) }
        // The second payload's link asked for directories ahead (on a disk or a tmpfs): empty, under attachment
        // names.
        try await waitUntil("directories made ahead") {
            entries(bed.attachments).contains {
                RandomName.isUUID($0) && entries(bed.attachments + "/" + $0).isEmpty
            }
        }
        for _ in 0..<10 { media += await enricher.enrich(payload, timeout: .seconds(5)).attachments.map(\.media) }
        await enricher.shutdown()
        #expect(media.count == 12)
        #expect(requests(bed, "/media/logo.png") == 1)
        #expect(
            Set(entries(bed.attachments))
                == Set(media.map { String($0.directory.dropFirst(bed.attachments.count + 1)) }))
        for item in media {
            #expect(entries(item.directory) == [String(item.path.dropFirst(item.directory.count + 1))])
            #expect(Array(FileManager.default.contents(atPath: item.path)!) == fixture("logo.png"))
        }
    }

    @Test("with the cache off, every payload fetches")
    func disabled() async throws {
        let bed = try TestBed { $0.cache.enabled = false }
        try await withEnricher(bed.configuration) { enricher in
            let payload = try payload(bed, "/media/logo.png")
            _ = await enricher.enrich(payload, timeout: .seconds(5))
            _ = await enricher.enrich(payload, timeout: .seconds(5))
            #expect(requests(bed, "/media/logo.png") == 2)
            #expect(bed.cacheFiles().isEmpty)
        }
    }

    @Test("gc removes old cache directories with the attachment directories")
    func garbage() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let cache = root + "/.cache-" + UUID().uuidString.lowercased()
        let attachment = root + "/" + UUID().uuidString.lowercased()
        let other = root + "/.hidden"
        for directory in [cache, attachment, other] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            try FileManager.default.setAttributes(
                [.modificationDate: Date(timeIntervalSinceNow: -7200)], ofItemAtPath: directory)
        }
        #expect(try AttachmentStore(root: root).collectGarbage(olderThan: .seconds(3600)).removed == 2)
        #expect(!FileManager.default.fileExists(atPath: cache))
        #expect(!FileManager.default.fileExists(atPath: attachment))
        #expect(FileManager.default.fileExists(atPath: other))
    }

    @Test("a full cache evicts a tenth at a time, oldest first, never the entry just added")
    func batchEviction() async throws {
        let bed = try TestBed { $0.cache.maximumEntries = 10 }
        try await withEnricher(bed.configuration) { enricher in
            // Each asked twice (the second gives it a cache link, and makes no request).
            for index in 0..<11 {
                for _ in 0..<2 {
                    _ = await enricher.enrich(try payload(bed, "/media/logo.png?v=\(index)"), timeout: .seconds(5))
                }
            }
            // 11 entries > 10: down to 9 in one pass, the two oldest gone, and with them their links.
            #expect(bed.cacheFiles().count == 9)
            // Asked again in this order, the next oldest (v=2) and the newest (v=10) come from the cache; the two
            // evicted ones are fetched again (9 entries + 2 = 11 evicts again only after v=1 is back).
            for index in [2, 10, 0, 1] {
                _ = await enricher.enrich(try payload(bed, "/media/logo.png?v=\(index)"), timeout: .seconds(5))
            }
            let log = bed.origin.requestLog
            #expect(
                [0, 1, 2, 10].map { index in log.filter { $0 == "/media/logo.png?v=\(index)" }.count } == [2, 2, 1, 1])
        }
    }

    @Test("a URL asked once gets no cache link; the second payload links the first's file into the cache")
    func linkOnSecondSight() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let payload = try payload(bed, "/media/logo.png")
            let first = await enricher.enrich(payload, timeout: .seconds(10))
            #expect(first.outcome == .complete)
            #expect(bed.cacheFiles().isEmpty)
            let second = await enricher.enrich(payload, timeout: .seconds(10))
            #expect(second.outcome == .complete)
            #expect(requests(bed, "/media/logo.png") == 1)
            try #require(bed.cacheFiles().count == 1)
            let paths = [first, second].compactMap { $0.attachments.first?.media.path }
            try #require(paths.count == 2)
            let cached = bed.attachments + "/" + bed.cacheFiles()[0]
            #expect(Set(try (paths + [cached]).map { try inode($0) }).count == 1)
            #expect(second.attachments.first?.media.sha256 == first.attachments.first?.media.sha256)
            // The first payload's attachment can go now: the cache and the second keep the bytes.
            #expect(enricher.removeAttachments(of: first) == 1)
            let third = await enricher.enrich(payload, timeout: .seconds(10))
            #expect(requests(bed, "/media/logo.png") == 1)
            #expect(
                Array(FileManager.default.contents(atPath: third.attachments[0].media.path)!) == fixture("logo.png"))
        }
    }

    @Test(
        "a caller that removes every attachment at once: the second payload fetches again and is linked, the rest hit")
    func firstFileRemovedBeforeSecondSight() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let payload = try payload(bed, "/media/logo.png")
            for round in 1...4 {
                let result = await enricher.enrich(payload, timeout: .seconds(10))
                #expect(result.outcome == .complete)
                #expect(
                    Array(FileManager.default.contents(atPath: result.attachments[0].media.path)!)
                        == fixture("logo.png"))
                #expect(enricher.removeAttachments(of: result) == 1)
                // The first payload's file went with it, so the second fetched again, and linked: then only hits.
                #expect(requests(bed, "/media/logo.png") == min(round, 2), "round \(round)")
                #expect(bed.cacheFiles().count == (round == 1 ? 0 : 1), "round \(round)")
            }
        }
    }

    @Test(
        """
        a first payload's file its caller changed (rewritten by rename, a link put in its place, its directory a link) \
        is not what a later payload of the URL gets: the URL is fetched again, and each file is what its result says
        """, arguments: ["rewritten", "file link", "directory link"])
    func firstFileChangedBeforeSecondSight(change: String) async throws {
        let bed = try TestBed()
        let elsewhere = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: elsewhere) }
        try await withEnricher(bed.configuration) { enricher in
            let payload = try payload(bed, "/media/logo.png")
            let first = await enricher.enrich(payload, timeout: .seconds(10))
            #expect(first.outcome == .complete)
            let media = first.attachments[0].media
            let name = (media.path as NSString).lastPathComponent
            // What the caller did to its own attachment, as an optimizer or a hostile caller would.
            let other = Data(repeating: 7, count: 188)
            switch change {
            case "rewritten":
                try other.write(to: URL(fileURLWithPath: media.path + ".new"))
                #expect(rename(media.path + ".new", media.path) == 0)
            case "file link":
                try other.write(to: URL(fileURLWithPath: elsewhere + "/secret"))
                try FileManager.default.removeItem(atPath: media.path)
                try FileManager.default.createSymbolicLink(
                    atPath: media.path, withDestinationPath: elsewhere + "/secret")
            default:
                try other.write(to: URL(fileURLWithPath: elsewhere + "/" + name))
                try FileManager.default.removeItem(atPath: media.directory)
                try FileManager.default.createSymbolicLink(atPath: media.directory, withDestinationPath: elsewhere)
            }
            let second = await enricher.enrich(payload, timeout: .seconds(10))
            #expect(second.outcome == .complete)
            let path = second.attachments[0].media.path
            var info = stat()
            #expect(lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG, "\(path)")
            #expect(Array(FileManager.default.contents(atPath: path) ?? Data()) == fixture("logo.png"))
            #expect(second.attachments[0].media.sha256 == media.sha256)
            #expect(requests(bed, "/media/logo.png") == 2)
        }
    }

    @Test(
        """
        a cache directory removed under a running cache (richpush gc past its age) is made again and refilled: one \
        fetch more, then hits, where every payload fetched again
        """)
    func cacheDirectoryRemoved() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let payload = try payload(bed, "/media/logo.png")
            for _ in 1...2 { #expect(await enricher.enrich(payload, timeout: .seconds(10)).outcome == .complete) }
            #expect(requests(bed, "/media/logo.png") == 1)
            let caches = try FileManager.default.contentsOfDirectory(atPath: bed.attachments).filter {
                $0.hasPrefix(".cache-")
            }
            #expect(caches.count == 1)
            // As gc removes it: the directory and its links.
            for cache in caches { try FileManager.default.removeItem(atPath: bed.attachments + "/" + cache) }
            for round in 1...4 {
                let result = await enricher.enrich(payload, timeout: .seconds(10))
                #expect(result.outcome == .complete)
                #expect(
                    Array(FileManager.default.contents(atPath: result.attachments[0].media.path) ?? Data())
                        == fixture("logo.png"), "round \(round)")
            }
            #expect(requests(bed, "/media/logo.png") == 2, "the cache was not refilled: each payload fetched")
            #expect(bed.cacheFiles().count == 1)
        }
    }

    @Test("a 304 keeps its entry counted once: revalidating one URL again and again evicts no other")
    func revalidationCountsOnce() async throws {
        // Stale at once, so every ask after the first revalidates; room for exactly the two URLs.
        let bed = try TestBed {
            $0.cache.timeToLive = .nanoseconds(1)
            $0.cache.maximumEntries = 2
        }
        try await withEnricher(bed.configuration) { enricher in
            for path in [
                "/media/logo.png", "/media/photo.jpg", "/media/logo.png", "/media/logo.png", "/media/logo.png",
            ] {
                let result = await enricher.enrich(try payload(bed, path), timeout: .seconds(10))
                #expect(result.outcome == .complete)
            }
            _ = await enricher.enrich(try payload(bed, "/media/photo.jpg"), timeout: .seconds(10))
            // The photo's entry is still there: its second request is a revalidation answered 304, not a new fetch.
            let photo = bed.origin.exchanges.filter { $0.target == "/media/photo.jpg" }
            try #require(photo.count == 2)
            #expect(photo[1].headers["if-none-match"] != nil, "the photo was evicted and fetched again")
            #expect(photo[1].status == 304)
        }
    }
}
