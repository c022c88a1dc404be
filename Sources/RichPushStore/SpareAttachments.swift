import RichPushCore

/// EnrichmentResult.Attachment directories with their empty partial files, made ahead on a thread of their own, so that the fetch
/// loop's thread takes one when a body starts instead of making it there.
///
/// Measured (`perf record` of `stream`, bench (a), 2,000 bodies of 100 KB): on ext4 right after many deletions,
/// the `mkdirat` and `openat` of `AttachmentRoot.begin()` were ~40% of the process's CPU, nearly all of it in
/// ext4's inode allocator (`find_inode_bit` -> `recently_deleted`), and all of it on the loop's thread, where
/// it held up every transfer. Made here, that cost runs on the second core while curl receives.
///
/// A spare is an attachment as `begin()` makes it (its own new directory, a hidden partial file opened `O_EXCL`)
/// under a hidden directory name, `.spare-<uuid>`, renamed to `<uuid>` when taken (a rename allocates no inode):
/// until then no listing, `gc` or `remove` sees an attachment in it. Nothing else about an attachment changes
/// but the thread that makes its directory and file. Spares are made only after the
/// first `take()` (an idle fetcher makes none), at most `capacity` at once; a spare older than `maximumAge` is
/// discarded rather than used (an old directory is what `gc` removes); `stop()` removes every one left.
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
        /// Whether a `take()` asked for more since the last refill.
        var wanted = false
        /// How many times a `take()` asked the maker for more.
        var asked = 0
        /// Whether the maker is between making a spare and shelving (or removing) it.
        var making = false
        var stopped = false
        /// Whether the maker's thread was started (at the first `take()`: a fetcher that stores nothing has none).
        var started = false
    }

    private let root: AttachmentRoot
    /// Whether spares are made at all; when not, `take()` makes each attachment then and no thread is started.
    package let makesAhead: Bool
    private let capacity: Int
    private let maximumAge: Duration
    private let shelf = LockedValue(Shelf())

    /// How many times a `take()` asked the maker for more spares (started it, or woke it).
    var timesAsked: Int { shelf.withLock { $0.asked } }

    /// Spares in `root`, at most `capacity` ready at once (a default of 32: half the fetch loop's 64 connections,
    /// refilled once half are taken, keeps one ready for every body started between two refills in bench (a)).
    /// `maximumAge` (default 2 s) bounds how long a spare directory sits unused before it is replaced.
    package init(root: AttachmentRoot, makesAhead: Bool = true, capacity: Int = 32, maximumAge: Duration = .seconds(2)) {
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
        let (spare, wake, start) = shelf.withLock { shelf -> (Spare?, Bool, Bool) in
            if let newest = shelf.ready.last, now - newest.made > maximumAge {
                // The newest is stale, so is every one: the maker removes them and makes fresh ones.
                shelf.discarded += shelf.ready
                shelf.ready = []
            }
            let spare = shelf.ready.popLast()
            let wake = !shelf.stopped && !shelf.wanted && shelf.ready.count <= capacity / 2
            if wake {
                shelf.wanted = true
                shelf.asked += 1
            }
            defer { shelf.started = shelf.started || wake }
            return (spare, wake, wake && !shelf.started)
        }
        if start {
            // The thread holds the service until `stop()` ends it.
            startDedicatedThread { [self] in run() }
        } else if wake {
            shelf.update { _ in }
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
        let (ready, discarded) = shelf.update { shelf -> ([Spare], [Spare]) in
            shelf.stopped = true
            defer {
                shelf.ready = []
                shelf.discarded = []
            }
            return (shelf.ready, shelf.discarded)
        }
        for spare in ready + discarded { spare.partial.discard() }
        shelf.wait { shelf in shelf.making ? nil : () }
    }

    private func run() {
        while true {
            let stale = shelf.wait { shelf -> [Spare]?? in
                if shelf.stopped { return .some(nil) }
                if !shelf.discarded.isEmpty || (shelf.wanted && shelf.ready.count < capacity) {
                    shelf.making = true
                    defer { shelf.discarded = [] }
                    return shelf.discarded
                }
                shelf.wanted = false
                return nil
            }
            guard let stale else { return }
            for spare in stale { spare.partial.discard() }
            let made = try? root.beginSpare()
            let leftover = shelf.update { shelf -> PartialAttachment? in
                if let made, !shelf.stopped {
                    shelf.ready.append(Spare(partial: made, made: .now))
                    shelf.making = false
                    return nil
                }
                // The store refuses (the next take() reports why): wait for it rather than retry at once.
                if made == nil { shelf.wanted = false }
                shelf.making = made != nil
                return made
            }
            if let leftover {
                // Stopped while it was being made: removed before `stop()` returns.
                leftover.discard()
                shelf.update { $0.making = false }
            }
        }
    }
}
