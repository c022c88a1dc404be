import Foundation
import Synchronization
import Testing

@testable import RichPush
@testable import RichPushStore

/// The hidden spare directories in `root` (`.spare-<uuid>`), sorted.
private func spares(in root: String) -> [String] {
    entries(root).filter { $0.hasPrefix(AttachmentRoot.sparePrefix) }
}

/// Runs `body` with spares over a new root at `path` (removed afterwards), then stops them; waits until
/// `ready` spares are made after a first take (kept open, discarded at the end) has started the maker.
private func withSpares(
    capacity: Int, maximumAge: Duration, ready: Int,
    _ body: (_ path: String, _ shelf: SpareAttachments) async throws -> Void
) async throws {
    let path = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: path) }
    let shelf = SpareAttachments(
        root: try AttachmentRoot(opening: path), capacity: capacity, maximumAge: maximumAge)
    defer { shelf.stop() }
    let first = try shelf.take()
    defer { first.discard() }
    // On the disk and on the shelf: the maker's thread may wait between making one and handing it over.
    try await waitUntil("\(ready) spares") { spares(in: path).count == ready && shelf.shelved.spares == ready }
    try await body(path, shelf)
}

/// A clock the test moves: the shelf reads it for each directory's age and each link's time.
private final class TestClock: Sendable {
    private let instant = Mutex(ContinuousClock.now)
    var now: ContinuousClock.Instant { instant.withLock { $0 } }
    func advance(_ duration: Duration) { instant.withLock { $0 += duration } }
}

/// An age no loaded machine reaches between making a spare and taking it.
private let longAge = Duration.seconds(3600)

/// The empty attachment directories in `root` (`<uuid>`, nothing in it): the ones made ahead for links.
private func emptyAttachmentDirectories(in root: String) -> [String] {
    entries(root).filter { RandomName.isUUID($0) && entries(root + "/" + $0).isEmpty }
}

/// Runs `body` with a shelf over a new root at `path` (removed afterwards) and a cache directory in it holding
/// `cached.jpg` (3 bytes), once a first link has started the maker and `ready` directories are made ahead.
private func withFolders(
    folders: Int, maximumAge: Duration, ready: Int,
    _ body: (_ path: String, _ shelf: SpareAttachments, _ cache: Directory) async throws -> Void
) async throws {
    let path = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: path) }
    let root = try AttachmentRoot(opening: path)
    let shelf = SpareAttachments(root: root, folders: folders, maximumAge: maximumAge)
    defer { shelf.stop() }
    let cache = try root.makeCacheDirectory(RandomName.uuid())
    #expect(FileManager.default.createFile(atPath: cache.path + "/cached.jpg", contents: Data([1, 2, 3])))
    // Made now (none is ready yet): it asks the maker for directories.
    let first = try shelf.link("cached.jpg", in: cache, fileExtension: "jpg")
    try await waitUntil("\(ready) directories made ahead") {
        emptyAttachmentDirectories(in: path).count == ready && shelf.shelved.folders == ready
    }
    #expect(!emptyAttachmentDirectories(in: path).contains(String(first.directory.dropFirst(path.count + 1))))
    try await body(path, shelf, cache)
}

/// Runs `body` with a shelf of at most 4 directories for links, a maximum age of 2 s and a clock the test moves,
/// over a new root at `path` (removed afterwards) with a cache directory in it holding `cached.jpg`, once a first
/// link has started the maker and its 4 are made. `link` links the cached file (the name of the directory it went
/// into); `settled(n)` waits until the refill has ended with `n` made ahead.
private func withClockedShelf(
    _ body: (
        _ path: String, _ shelf: SpareAttachments, _ clock: TestClock, _ link: () throws -> String,
        _ settled: (Int) async throws -> Void
    ) async throws -> Void
) async throws {
    let path = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: path) }
    let root = try AttachmentRoot(opening: path)
    let clock = TestClock()
    let shelf = SpareAttachments(root: root, folders: 4, maximumAge: .seconds(2), now: { clock.now })
    defer { shelf.stop() }
    let cache = try root.makeCacheDirectory(RandomName.uuid())
    #expect(FileManager.default.createFile(atPath: cache.path + "/cached.jpg", contents: Data([1, 2, 3])))
    func link() throws -> String {
        String(try shelf.link("cached.jpg", in: cache, fileExtension: "jpg").directory.dropFirst(path.count + 1))
    }
    func settled(_ made: Int) async throws {
        try await waitUntil("\(made) directories made ahead, the refill ended") {
            !shelf.refilling && shelf.shelved.folders == made && emptyAttachmentDirectories(in: path).count == made
        }
    }
    _ = try link()
    try await settled(4)
    try await body(path, shelf, clock, link, settled)
}

@Suite("Spare attachments: made ahead off the fetch loop, hidden until taken, none left at the end")
struct SpareAttachmentsTests {
    @Test(
        "a taken spare is an attachment directory of its own, with its partial file, and commits as begin()'s"
    )
    func takenSpareIsRevealed() async throws {
        try await withSpares(capacity: 4, maximumAge: longAge, ready: 4) { path, shelf in
            let ready = spares(in: path)
            let taken = try shelf.take()
            let name = String(taken.directory.dropFirst(path.count + 1))
            // It was one of the spares, now under its attachment name.
            #expect(RandomName.isUUID(name))
            #expect(ready.contains(AttachmentRoot.sparePrefix + name))
            #expect(!spares(in: path).contains(AttachmentRoot.sparePrefix + name))
            #expect(entries(taken.directory).count == 1)
            let bytes: [UInt8] = [1, 2, 3]
            try bytes.withUnsafeBytes { try taken.write($0) }
            let committed = try taken.commit(fileExtension: "jpg")
            #expect(committed.hasPrefix(taken.directory + "/"))
            #expect(FileManager.default.contents(atPath: committed) == Data(bytes))
        }
    }

    @Test("stop() removes every spare before it returns: nothing but attachments is left")
    func stopRemovesSpares() async throws {
        try await withSpares(capacity: 8, maximumAge: longAge, ready: 8) { path, shelf in
            let kept = try shelf.take()
            let committed = try kept.commit(fileExtension: "png")
            shelf.stop()
            // The first take's partial (still open) and the committed attachment: no spare.
            #expect(spares(in: path).isEmpty)
            #expect(entries(path).count == 2)
            #expect(entries(path).contains(String(kept.directory.dropFirst(path.count + 1))))
            #expect(FileManager.default.fileExists(atPath: committed))
            // A take after stop still works, without spares, and asks no maker for more (the decision is the
            // take's own: nothing is left to wait for).
            let asked = shelf.timesAsked
            let late = try shelf.take()
            late.discard()
            #expect(shelf.timesAsked == asked, "a take after stop asked the maker for spares")
            #expect(spares(in: path).isEmpty)
        }
    }

    @Test("a spare older than its maximum age is not used, and the maker removes it")
    func staleSparesAreReplaced() async throws {
        let maximumAge = Duration.milliseconds(20)
        try await withSpares(capacity: 4, maximumAge: maximumAge, ready: 4) { path, shelf in
            let stale = Set(spares(in: path))
            // Each was made before now: once the maximum age has passed from now, each is older than it. (Time is
            // what is waited for here, not an event.)
            try await Task.sleep(until: .now + maximumAge + .milliseconds(1), clock: .continuous)
            let taken = try shelf.take()
            defer { taken.discard() }
            let name = String(taken.directory.dropFirst(path.count + 1))
            #expect(!stale.contains(AttachmentRoot.sparePrefix + name))
            try await waitUntil("the stale spares removed") { stale.isDisjoint(with: spares(in: path)) }
        }
    }

    @Test("a fetcher leaves no spare behind once shut down; attachments are whole and hashed")
    func fetcherLeavesNoSpare() async throws {
        let bed = try TestBed()
        let media = try await withFetcher(bed.configuration) { fetcher in
            var media: [FetchedMedia] = []
            for _ in 0..<3 {
                media.append(
                    try await fetcher.fetch(bed.url("/media/photo.jpg"), timeout: .seconds(10)).get())
            }
            try await waitUntil("spares made") { !spares(in: bed.attachments).isEmpty }
            return media
        }
        #expect(spares(in: bed.attachments).isEmpty)
        #expect(
            Set(entries(bed.attachments))
                == Set(media.map { String($0.directory.dropFirst(bed.attachments.count + 1)) }))
        for item in media {
            #expect(Array(FileManager.default.contents(atPath: item.path)!) == fixture("photo.jpg"))
            #expect(item.sha256 == (try await sha256sum(item.path)))
        }
    }

    @Test("a link goes into an empty directory made ahead, each used once, and stop() removes the ones left")
    func linksUseDirectoriesMadeAhead() async throws {
        try await withFolders(folders: 4, maximumAge: longAge, ready: 4) { path, shelf, cache in
            let ahead = Set(emptyAttachmentDirectories(in: path))
            let linked = try (0..<2).map { _ in try shelf.link("cached.jpg", in: cache, fileExtension: "jpg") }
            #expect(Set(linked.map(\.directory)).count == 2)
            for (directory, file) in linked {
                #expect(ahead.contains(String(directory.dropFirst(path.count + 1))), "\(directory) was not made ahead")
                #expect(entries(directory) == [String(file.dropFirst(directory.count + 1))])
                #expect(FileManager.default.contents(atPath: file) == Data([1, 2, 3]))
            }
            shelf.stop()
            // The links' directories and the first one's, the cache: no empty directory is left.
            #expect(emptyAttachmentDirectories(in: path).isEmpty)
            #expect(entries(path).count == 4)
        }
    }

    @Test("a directory made ahead that someone removed (gc): the link makes one of its own")
    func removedDirectoryMadeAhead() async throws {
        try await withFolders(folders: 2, maximumAge: longAge, ready: 2) { path, shelf, cache in
            let ahead = emptyAttachmentDirectories(in: path)
            for name in ahead { try FileManager.default.removeItem(atPath: path + "/" + name) }
            let (directory, file) = try shelf.link("cached.jpg", in: cache, fileExtension: "jpg")
            #expect(!ahead.contains(String(directory.dropFirst(path.count + 1))))
            #expect(FileManager.default.contents(atPath: file) == Data([1, 2, 3]))
        }
    }

    @Test("a directory made ahead and older than the maximum age is not used, and the maker removes it")
    func staleDirectoriesAreReplaced() async throws {
        let maximumAge = Duration.milliseconds(20)
        try await withFolders(folders: 4, maximumAge: maximumAge, ready: 4) { path, shelf, cache in
            let stale = Set(emptyAttachmentDirectories(in: path))
            // Each was made before now: once the maximum age has passed from now, each is older than it.
            try await Task.sleep(until: .now + maximumAge + .milliseconds(1), clock: .continuous)
            let (directory, _) = try shelf.link("cached.jpg", in: cache, fileExtension: "jpg")
            #expect(!stale.contains(String(directory.dropFirst(path.count + 1))))
            try await waitUntil("the stale directories removed") {
                stale.isDisjoint(with: entries(path))
            }
        }
    }

    @Test("how many the maker keeps ready follows the takes: all at first, none once all stale, halved, doubled")
    func fillFollowsTakes() {
        let age = Duration.seconds(2)
        let start = ContinuousClock.now
        var fill = Fill(capacity: 8)
        #expect(fill.target == 0 && !fill.isLow(0), "kept ready before any take")
        fill.took(found: false, dropped: 0, at: start, maximumAge: age)
        #expect(fill.target == 8 && fill.isLow(4) && !fill.isLow(5))
        // Found fresh ones: the target stays.
        fill.took(found: true, dropped: 0, at: start + .seconds(1), maximumAge: age)
        #expect(fill.target == 8)
        // Some went stale under a fresh one: the shelf held more than was used while fresh.
        fill.took(found: true, dropped: 3, at: start + .seconds(2), maximumAge: age)
        #expect(fill.target == 4)
        // All the ones ready went stale: none kept.
        fill.took(found: false, dropped: 4, at: start + .seconds(5), maximumAge: age)
        #expect(fill.target == 0 && !fill.isLow(0))
        // Takes further apart than the maximum age: still none.
        fill.took(found: false, dropped: 0, at: start + .seconds(8), maximumAge: age)
        #expect(fill.target == 0)
        // Closer: one, then doubled each time a take finds none, up to the capacity.
        var at = start + .seconds(9)
        for expected in [1, 2, 4, 8, 8] {
            fill.took(found: false, dropped: 0, at: at, maximumAge: age)
            #expect(fill.target == expected)
            at += .milliseconds(1)
        }
        // A take that finds one does not double it; halving stops at one.
        fill.took(found: true, dropped: 0, at: at, maximumAge: age)
        #expect(fill.target == 8 && fill.isLow(3))
        for expected in [4, 2, 1, 1] {
            fill.took(found: true, dropped: 1, at: at, maximumAge: age)
            #expect(fill.target == expected)
        }
    }

    @Test("directories made ahead are used in the order made; one stale under fresher ones goes, fewer are kept")
    func staleUnderFreshIsRemoved() async throws {
        try await withClockedShelf { path, shelf, clock, link, settled in
            let first = Set(emptyAttachmentDirectories(in: path))
            // A second later two links take the two newest, the second at the refill mark (half of 4): the maker puts
            // two fresh ones above the two oldest.
            clock.advance(.seconds(1))
            for _ in 0..<2 { _ = try link() }
            try await settled(4)
            var oldest = first.intersection(emptyAttachmentDirectories(in: path))
            #expect(oldest.count == 2)
            // They are used in the order made: the next link goes into one of the oldest.
            clock.advance(.milliseconds(500))
            let used = try link()
            #expect(oldest.contains(used), "a link skipped the oldest directories made ahead")
            oldest.remove(used)
            // The other oldest is now past the maximum age, the rest not: the next link takes a fresh one, and the
            // stale one goes.
            clock.advance(.seconds(1))
            let linked = try link()
            #expect(!oldest.contains(linked))
            try await waitUntil("the stale directory removed") { oldest.isDisjoint(with: entries(path)) }
            #expect(shelf.targets.folders == 2)
        }
    }

    @Test("after an idle stretch the maker removes the stale directories and makes none until links come closer")
    func idleShelfStaysEmpty() async throws {
        try await withClockedShelf { path, shelf, clock, link, settled in
            let stale = Set(emptyAttachmentDirectories(in: path))
            // Idle past the maximum age: the next link finds them stale; the maker removes them and makes none.
            clock.advance(.seconds(3))
            #expect(!stale.contains(try link()))
            try await settled(0)
            #expect(shelf.targets.folders == 0)
            // Another link further apart than the maximum age: it asks the maker for nothing.
            let asked = shelf.timesAsked
            clock.advance(.seconds(3))
            _ = try link()
            #expect(shelf.timesAsked == asked, "a link after an idle stretch asked the maker for directories")
            // One within the maximum age of it: the maker keeps one ready, and the next link uses it.
            clock.advance(.seconds(1))
            _ = try link()
            try await settled(1)
            let ahead = emptyAttachmentDirectories(in: path)
            clock.advance(.seconds(1))
            #expect(ahead == [try link()])
            try await settled(1)
            #expect(shelf.targets.folders == 1)
        }
    }

    @Test("gc removes a spare a killed process left, and only an old one")
    func gcRemovesLeftSpares() throws {
        let path = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let old = path + "/" + AttachmentRoot.sparePrefix + attachmentName()
        let fresh = path + "/" + AttachmentRoot.sparePrefix + attachmentName()
        let other = path + "/.spare-not-a-uuid"
        for directory in [old, fresh, other] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        }
        #expect(FileManager.default.createFile(atPath: old + "/.x.partial", contents: Data()))
        try makeOld(old)
        try makeOld(other)
        #expect(try AttachmentStore(root: path).collectGarbage(olderThan: .seconds(3600)).removed == 1)
        #expect(
            entries(path) == [".spare-not-a-uuid", String(fresh.dropFirst(path.count + 1))].sorted())
    }
}
