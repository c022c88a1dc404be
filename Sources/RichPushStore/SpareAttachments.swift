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
/// `maximumAge` is discarded rather than used (an old directory is what `gc` removes); `stop()` removes every one left.
///
/// A fetcher whose root is on a tmpfs (`AttachmentRoot.isInMemory`) makes none (`makesAhead` false: every `take()`
/// is a `begin()`): there a spare's rename and second open cost the loop's thread more than the `mkdirat` and
/// `openat` they save. Measured (bench (a), 12 alternated runs each): 0.375 s without spares against 0.407 s with
/// them on a tmpfs; on ext4 spares stayed ahead (0.60 against 0.63 s).
package final class SpareAttachments: Sendable {
    /// A partial attachment handed between the maker's thread and the taker's: owned by one thread at a time,
    /// and handed over only under the shelf's lock.
    private struct Spare: @unchecked Sendable {
        let partial: PartialAttachment
        let made: ContinuousClock.Instant
    }

    private struct Shelf {
        var ready: [Spare] = []
        /// Spares to remove, handed to the maker's thread (stale ones).
        var discarded: [Spare] = []
        /// Whether a refill is queued or running (a `take()` asked for more since the last refill ended).
        var wanted = false
        /// How many times a `take()` asked the maker for more.
        var asked = 0
        var stopped = false
    }

    private let root: AttachmentRoot
    /// Whether spares are made at all; when not, `take()` makes each attachment then and no thread is started.
    package let makesAhead: Bool
    private let capacity: Int
    private let maximumAge: Duration
    private let shelf = LockedValue(Shelf())
    private let maker = WorkerThreads(name: "rp-spares")

    /// How many times a `take()` asked the maker for more spares (started it, or woke it).
    var timesAsked: Int { shelf.withLock { $0.asked } }

    /// Spares in `root`, at most `capacity` ready at once (a default of 32: half the fetch loop's 64 connections,
    /// refilled once half are taken, keeps one ready for every body started between two refills in bench (a)).
    /// `maximumAge` (default 2 s) bounds how long a spare directory sits unused before it is replaced.
    package init(root: AttachmentRoot, makesAhead: Bool = true, capacity: Int = 32, maximumAge: Duration = .seconds(2))
    {
        self.root = root
        self.makesAhead = makesAhead
        self.capacity = capacity
        self.maximumAge = maximumAge
    }

    /// A new partial attachment: a spare when one is ready and fresh, else one made now (`AttachmentRoot.begin`).
    /// - Throws: `StoreError` from `begin()` when there is no spare and the store refuses.
    package func take() throws(StoreError) -> PartialAttachment {
        guard makesAhead else { return try root.begin() }
        let now = ContinuousClock.now
        let (spare, refill) = shelf.withLock { shelf -> (Spare?, Bool) in
            if let newest = shelf.ready.last, now - newest.made > maximumAge {
                // The newest is stale, so is every one: the maker removes them and makes fresh ones.
                shelf.discarded += shelf.ready
                shelf.ready = []
            }
            let spare = shelf.ready.popLast()
            let refill = !shelf.stopped && !shelf.wanted && shelf.ready.count <= capacity / 2
            if refill {
                shelf.wanted = true
                shelf.asked += 1
            }
            return (spare, refill)
        }
        if refill {
            // The queued refill holds the service until it has run (or `stop()` dropped it).
            maker.submit { [self] turn in
                if case .run = turn { self.refill() }
            }
        }
        if let spare {
            // A failed rename removes the spare; `begin()` then tries, and reports why the store refuses.
            if (try? spare.partial.reveal()) != nil { return spare.partial }
        }
        return try root.begin()
    }

    /// Removes every spare left and ends the thread; returns once no spare is being made, so that nothing is
    /// left behind when the process exits right after.
    package func stop() {
        let (ready, discarded) = shelf.withLock { shelf -> ([Spare], [Spare]) in
            shelf.stopped = true
            defer {
                shelf.ready = []
                shelf.discarded = []
            }
            return (shelf.ready, shelf.discarded)
        }
        for spare in ready + discarded { spare.partial.discard() }
        // A refill under way sees the stop after the spare it is making, and removes that one itself.
        maker.shutdownAndWait(.refuse)
    }

    /// Makes spares until the shelf is full (removing the stale ones first), or the service stops.
    private func refill() {
        while true {
            let stale = shelf.withLock { shelf -> [Spare]? in
                guard !shelf.stopped, !shelf.discarded.isEmpty || shelf.ready.count < capacity else {
                    shelf.wanted = false
                    return nil
                }
                defer { shelf.discarded = [] }
                return shelf.discarded
            }
            guard let stale else { return }
            for spare in stale { spare.partial.discard() }
            guard let made = try? root.beginSpare() else {
                // The store refuses (the next take() reports why): wait for it rather than retry at once.
                shelf.withLock { $0.wanted = false }
                return
            }
            let shelved = shelf.withLock { shelf -> Bool in
                guard !shelf.stopped else { return false }
                shelf.ready.append(Spare(partial: made, made: .now))
                return true
            }
            // Stopped while it was being made: removed before `stop()` returns.
            if !shelved { made.discard() }
        }
    }
}
