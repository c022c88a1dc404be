import RichPushCore

/// Attachment directories with their empty partial files, made ahead on a thread of their own (`WorkerThreads`), so
/// that the fetch loop's thread takes one when a body starts instead of making it there.
///
/// Measured (`perf record` of `stream`, bench (a), 2,000 bodies of 100 KB): on ext4 right after many deletions,
/// the `mkdirat` and `openat` of `AttachmentRoot.begin()` were ~40% of the process's CPU, nearly all of it in
/// ext4's inode allocator (`find_inode_bit` -> `recently_deleted`), and all of it on the loop's thread, where
/// it held up every transfer. Made here, that cost runs on the second core while curl receives.
///
/// A spare is an attachment as `begin()` makes it (its own new directory, a hidden partial file opened `O_EXCL`)
/// under a hidden directory name, `.spare-<uuid>`, renamed to `<uuid>` when taken (a rename allocates no inode):
/// until then no listing, `gc` or `remove` sees an attachment in it. Nothing else about an attachment changes
/// but the thread that makes its directory and file. Spares are made only after the first `take()` (an idle fetcher
/// makes none, and starts no thread), by one refill at a time, at most `capacity` at once; a spare older than
/// `maximumAge` is discarded rather than used (an old directory is what `gc` removes); how many are kept ready follows
/// the pace of the takes (`Fill`: none while they come further apart than `maximumAge`); `stop()` removes every one
/// left.
///
/// The media cache's links get empty attachment directories made ahead the same way (`link(_:in:fileExtension:)`):
/// a cache hit costs a `mkdirat` in the root and a `linkat` into the new directory, and every `mkdirat` in the root
/// takes the root's lock, so the hits' directories are made one after another whoever makes them. Made by the
/// pool's threads, a thread waiting for that lock spins on it instead of enriching other payloads; made here, one
/// thread makes them back to back, and the pool's threads only link (the link takes the new directory's lock, not
/// the root's). These are made under their final name, `<uuid>`, as `begin()` makes a transfer's directory before
/// its body arrives: a spare's hidden name would cost a `renameat`, which takes the root's lock again (~24 us on a
/// journaled ext4, half a `mkdirat`). So a listing of the root can see up to `folders` empty attachment
/// directories while the cache links; each is used by one link at most, none older than `maximumAge`, and
/// `stop()` removes those left (a process killed first leaves them to `gc`, as any attachment directory). Made only
/// after the first link asks for one. Measured (bench (b)'s 10,000 payloads on a journaled ext4, three sets of 16
/// alternated pairs): CPU 0.903x, 0.913x and 0.969x, wall 0.941x, 0.967x and 0.964x (docs/performance.md).
///
/// A fetcher whose root is on a tmpfs (`AttachmentRoot.isInMemory`) makes no spares (`makesSpares` false: every
/// `take()` is a `begin()`): there a spare's rename and second open cost the loop's thread more than the `mkdirat`
/// and `openat` they save. Measured (bench (a), 12 alternated runs each): 0.375 s without spares against 0.407 s
/// with them on a tmpfs; on ext4 spares stayed ahead (0.60 against 0.63 s). It makes directories for links there
/// too (`makesFolders`): they cost no rename, and made by the pool's threads their `mkdirat`s contended for the
/// root's lock on a tmpfs as on a disk (`rwsem_spin_on_owner` 1-6% of `stream`'s and `serve`'s CPU on a campaign
/// of cache hits).
package final class SpareAttachments: Sendable {
    /// A partial attachment handed between the maker's thread and the taker's: owned by one thread at a time,
    /// and handed over only under the shelf's lock.
    private struct Spare: MadeAhead, @unchecked Sendable {
        let partial: PartialAttachment
        let made: ContinuousClock.Instant
    }

    /// An empty attachment directory `<uuid>` made ahead for a link (`link(_:in:fileExtension:)`): its name in the
    /// root, and when it was made.
    private struct Folder: MadeAhead {
        let name: String
        let made: ContinuousClock.Instant
    }

    private struct Shelf {
        /// Spares made ahead, once a take asked for one.
        var spares: Stock<Spare>
        /// Directories made ahead for links, once a link asked for one.
        var folders: Stock<Folder>
        /// Whether a refill is queued or running (a `take()` or a link asked for more since the last refill ended).
        var wanted = false
        /// How many times a `take()` or a link asked the maker for more.
        var asked = 0
        var stopped = false

        /// Whether to queue a refill now (`due`: a shelf is at or below its refill mark, or has stale items to
        /// remove); records the ask.
        mutating func askRefill(_ due: Bool) -> Bool {
            guard !stopped, !wanted, due else { return false }
            wanted = true
            asked += 1
            return true
        }

        /// The stale spares and directories, handed to the maker's thread to remove.
        mutating func takeDiscarded() -> (spares: [Spare], folders: [Folder]) {
            (spares.takeDiscarded(), folders.takeDiscarded())
        }
    }

    private let root: AttachmentRoot
    /// Whether spares are made at all; when not, `take()` makes each attachment then.
    package let makesSpares: Bool
    /// Whether directories for links are made ahead; when not, each link makes its own. (With neither, no thread
    /// is started.)
    package let makesFolders: Bool
    private let maximumAge: Duration
    private let shelf: LockedValue<Shelf>
    /// The time a spare or a directory is made and taken, for its age (the continuous clock's; tests move their own).
    private let now: @Sendable () -> ContinuousClock.Instant
    private let maker = WorkerThreads(name: "rp-spares")

    /// How many times a `take()` asked the maker for more spares (started it, or woke it).
    var timesAsked: Int { shelf.withLock { $0.asked } }

    /// How many spares and directories for links are on the shelves now: made and handed over (one already on the
    /// disk may not be yet: the maker's thread hands it over after making it).
    var shelved: (spares: Int, folders: Int) { shelf.withLock { ($0.spares.ready.count, $0.folders.ready.count) } }

    /// Whether a refill is queued or running: once false, the maker has made and removed all it was asked to.
    var refilling: Bool { shelf.withLock { $0.wanted } }

    /// How many spares and directories for links the maker keeps ready now (`Fill.target`).
    var targets: (spares: Int, folders: Int) { shelf.withLock { ($0.spares.fill.target, $0.folders.fill.target) } }

    /// Spares in `root`, at most `capacity` ready at once (a default of 32: half the fetch loop's 64 connections,
    /// refilled once half of the target are taken, keeps one ready for every body started between two refills in
    /// bench (a)), and at most `folders` empty directories for links (a default of 64, likewise: 32 directories
    /// are about 1.3 ms of the maker's time on a journaled ext4, and 16 or 256 measured the same in bench (b);
    /// fewer leave less for `stop()` to remove); how many of each are kept ready follows the takes (`Fill`).
    /// `maximumAge` (default 2 s) bounds how long a spare or a directory sits unused before it is discarded, and how
    /// far apart takes (or links) may come for the maker to keep any ready for them. `now` reads the time (tests pass
    /// a clock of their own).
    package init(
        root: AttachmentRoot, makesSpares: Bool = true, makesFolders: Bool = true, capacity: Int = 32,
        folders: Int = 64, maximumAge: Duration = .seconds(2),
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
    ) {
        self.root = root
        self.makesSpares = makesSpares
        self.makesFolders = makesFolders
        self.maximumAge = maximumAge
        self.now = now
        shelf = LockedValue(Shelf(spares: Stock(capacity: capacity), folders: Stock(capacity: folders)))
    }

    /// A new partial attachment: a spare when one is ready and fresh, else one made now (`AttachmentRoot.begin`).
    /// - Throws: `StoreError` from `begin()` when there is no spare and the store refuses.
    package func take() throws(StoreError) -> PartialAttachment {
        guard makesSpares else { return try root.begin() }
        let now = now()
        let (spare, refill) = shelf.withLock { shelf -> (Spare?, Bool) in
            let (spare, due) = shelf.spares.take(at: now, maximumAge: maximumAge)
            return (spare, shelf.askRefill(due))
        }
        if refill { submitRefill() }
        if let spare {
            // A failed rename removes the spare; `begin()` then tries, and reports why the store refuses.
            if (try? spare.partial.reveal()) != nil { return spare.partial }
        }
        return try root.begin()
    }

    /// A new attachment directory holding a hard link to `name` in `source` (a complete file on the same file
    /// system) as `<uuid>.<ext>`, as `AttachmentRoot.link` makes one: in a directory made ahead when one is ready and
    /// fresh, else in one made now (also when the link into the one made ahead fails: someone removed it).
    /// - Throws: `StoreError` with the system's reason; nothing is left behind.
    package func link(_ name: String, in source: Directory, fileExtension: String) throws(StoreError) -> (
        directory: String, path: String
    ) {
        guard makesFolders else { return try root.link(name, in: source, fileExtension: fileExtension) }
        let now = now()
        let (folder, refill) = shelf.withLock { shelf -> (Folder?, Bool) in
            let (folder, due) = shelf.folders.take(at: now, maximumAge: maximumAge)
            return (folder, shelf.askRefill(due))
        }
        if refill { submitRefill() }
        if let folder, let linked = try? root.link(name, in: source, into: folder.name, fileExtension: fileExtension) {
            return linked
        }
        return try root.link(name, in: source, fileExtension: fileExtension)
    }

    /// Makes one item with `make` and puts it on the shelf with `shelve`, or, when stopped while it was being made,
    /// `remove`s it (before `stop()` returns). False when the store refuses: the refill then ends rather than retry at
    /// once, and the next take or link, which makes its own, reports why.
    private func make<Item>(
        _ make: () throws(StoreError) -> Item, shelve: (inout Shelf, Item) -> Void, remove: (Item) -> Void
    ) -> Bool {
        guard let item = try? make() else {
            // Stale ones a take discarded meanwhile are removed now: it asked for no refill, one being under way.
            let stale = shelf.withLock { shelf in
                shelf.wanted = false
                return shelf.takeDiscarded()
            }
            self.remove(stale.spares, stale.folders)
            return false
        }
        let shelved = shelf.withLock { shelf -> Bool in
            guard !shelf.stopped else { return false }
            shelve(&shelf, item)
            return true
        }
        if !shelved { remove(item) }
        return true
    }

    /// Removes spares and directories made ahead (stale ones, or those left at the stop).
    private func remove(_ spares: [Spare], _ folders: [Folder]) {
        for spare in spares { spare.partial.discard() }
        for folder in folders { root.removeEmptyDirectory(folder.name) }
    }

    /// Queues a refill on the maker's thread.
    private func submitRefill() {
        // The queued refill holds the service until it has run (or `stop()` dropped it).
        maker.submit { [self] turn in
            if case .run = turn { self.refill() }
        }
    }

    /// Removes every spare left and ends the thread; returns once no spare is being made, so that nothing is
    /// left behind when the process exits right after.
    package func stop() {
        let (spares, folders) = shelf.withLock { shelf in
            shelf.stopped = true
            return (shelf.spares.takeAll(), shelf.folders.takeAll())
        }
        remove(spares, folders)
        // A refill under way sees the stop after the spare or directory it is making, and removes that one itself.
        maker.shutdownAndWait(.refuse)
    }

    /// What the maker makes next.
    private enum Next {
        case spare, folder
    }

    /// Makes spares, then directories, until both shelves hold their targets (removing the stale ones first), or the
    /// service stops.
    private func refill() {
        while true {
            let work = shelf.withLock { shelf -> (stale: (spares: [Spare], folders: [Folder]), next: Next?)? in
                // Spares first: the fetch loop's thread waits on a missing one; each shelf once it was asked for.
                let next: Next? = shelf.spares.isShort ? .spare : shelf.folders.isShort ? .folder : nil
                guard !shelf.stopped, next != nil || shelf.spares.hasDiscarded || shelf.folders.hasDiscarded else {
                    shelf.wanted = false
                    return nil
                }
                return (shelf.takeDiscarded(), next)
            }
            guard let work else { return }
            remove(work.stale.spares, work.stale.folders)
            switch work.next {
            case .spare:
                let made = make(
                    { () throws(StoreError) in try root.beginSpare() },
                    shelve: { $0.spares.ready.append(Spare(partial: $1, made: now())) }, remove: { $0.discard() })
                guard made else { return }
            case .folder:
                let made = make(
                    { () throws(StoreError) in try root.makeAttachmentDirectory() },
                    shelve: { $0.folders.ready.append(Folder(name: $1, made: now())) },
                    remove: { root.removeEmptyDirectory($0) })
                guard made else { return }
            case nil:
                continue
            }
        }
    }
}

/// Something the spares' maker made, and when (a spare, a directory for a link).
private protocol MadeAhead {
    var made: ContinuousClock.Instant { get }
}

/// One kind made ahead (spares, or directories for links): those ready, in the order made, those discarded as stale
/// (for the maker's thread to remove), and how many the maker keeps ready.
private struct Stock<Item: MadeAhead> {
    var ready: [Item] = []
    var discarded: [Item] = []
    var fill: Fill

    init(capacity: Int) {
        fill = Fill(capacity: capacity)
    }

    /// Whether the maker should make one more.
    var isShort: Bool { ready.count < fill.target }

    /// Whether stale ones wait for the maker to remove them.
    var hasDiscarded: Bool { !discarded.isEmpty }

    /// Takes the oldest ready that is at most `maximumAge` old at `now`, after moving those older than that to
    /// `discarded`, and records the take in `fill`; `due` when the maker has work: the stock is at or below its refill
    /// mark, or stale ones wait to be removed. `ready` is used in the order made: one sits at most as long as the
    /// takes need to use those made before it, so one passes `maximumAge` only when the stock holds more than the takes
    /// use in that time. (Taking the newest left the oldest at the bottom while the maker kept the top filled: under
    /// any steady pace they aged there, and either went all at once when a take with the maker behind reached them,
    /// or, dropped as they aged, read as a stock too large at 60,000 takes a second.)
    mutating func take(at now: ContinuousClock.Instant, maximumAge: Duration) -> (item: Item?, due: Bool) {
        var dropped = 0
        if let oldest = ready.first, now - oldest.made > maximumAge {
            dropped = ready.firstIndex { now - $0.made <= maximumAge } ?? ready.count
            discarded += ready[..<dropped]
            ready.removeFirst(dropped)
        }
        let item = ready.isEmpty ? nil : ready.removeFirst()
        fill.took(found: item != nil, dropped: dropped, at: now, maximumAge: maximumAge)
        return (item, fill.isLow(ready.count) || dropped > 0)
    }

    /// The stale ones, now the caller's to remove.
    mutating func takeDiscarded() -> [Item] {
        defer { discarded = [] }
        return discarded
    }

    /// Every one left, ready or stale, now the caller's to remove.
    mutating func takeAll() -> [Item] {
        defer { ready = [] }
        return ready + takeDiscarded()
    }
}

/// How many of one kind (spares, directories for links) the maker keeps ready, following the takes: none before the
/// first, then `capacity` (a run starts with a burst); none once every one ready went stale unused (the takes came
/// further apart than the maximum age, or stopped after a burst: each would find its item stale, and the maker would
/// make and remove them for nothing); halved (to one at least) when some went stale while a fresh one was there (the
/// shelf held more than the takes used while fresh); doubled, from one up to `capacity`, each time a take finds none
/// ready when it comes within the maximum age of the one before (one made ahead would have been used while fresh).
///
/// Before, the maker kept `capacity` ready whatever the pace: below one take every maximum age, each found them all
/// stale, so each take cost the maker `capacity` removals and as many new ones (64 `rmdir` and 64 `mkdir` for a cache
/// hit's link), and at a few takes a second they went stale in turns. Now an idle stretch costs one discard, and
/// at any steady pace the maker keeps about what is used before it goes stale.
package struct Fill: Sendable {
    /// The most kept ready.
    package let capacity: Int
    /// How many the maker keeps ready now.
    package private(set) var target = 0
    /// When the last take came, if one has.
    private var lastTake: ContinuousClock.Instant?

    package init(capacity: Int) {
        self.capacity = capacity
    }

    /// Records a take at `now`: whether it `found` one ready and fresh, and how many it `dropped` as stale.
    package mutating func took(found: Bool, dropped: Int, at now: ContinuousClock.Instant, maximumAge: Duration) {
        defer { lastTake = now }
        guard let lastTake else {
            target = capacity
            return
        }
        if dropped > 0 {
            target = found ? max(1, target / 2) : 0
        } else if !found, now - lastTake <= maximumAge {
            target = min(capacity, max(1, target * 2))
        }
    }

    /// Whether a shelf holding `count` is at or below its refill mark (half its target).
    package func isLow(_ count: Int) -> Bool {
        target > 0 && count <= target / 2
    }
}
