import RichPushCore
import RichPushFetch
import RichPushStore

#if canImport(Glibc)
    import Glibc
#endif

/// Fetches each URL once for many payloads: a URL in flight for several payloads is fetched once (single
/// flight), and a URL fetched recently is not fetched again within the time to live; once stale it is
/// revalidated with its ETag / Last-Modified. Every payload still gets its own attachment directory and file: a
/// hard link to the cached bytes, which costs a mkdir and a link.
///
/// The cache keeps its own hard link to an entry's file in `<root>/.cache-<uuid>/` once its URL is wanted a
/// second time (a payload waiting on the fetch in flight, or a later one); until then the entry points at the
/// first payload's file, and a second payload first links that into the cache. A URL seen once (bench (a):
/// 2,000 distinct images) so costs no link when fetched and no unlink at shutdown, which were 12% of that run's
/// wall time. If the first payload's file is gone by then (its caller removed it), the URL is fetched again and
/// linked at once, as is a URL fetched again once stale: a caller that removes every attachment as soon as it
/// has it pays one fetch more than with a link at once, not a fetch per payload.
/// Entries are bounded in number and bytes (least recently used out first); the directory is removed at
/// shutdown and by `gc`. Failures are never cached.
///
/// The bookkeeping (entries, time to live, eviction, who waits for which URL) is `CacheState`, tested without I/O;
/// this is its driver: it reads the clock, does the fetches and the links, and resumes the waiters.
package final class MediaCache: Sendable {
    private let source: any MediaSource
    private let store: AttachmentRoot
    /// Where each payload's link gets its directory, made ahead on the spares' thread when it can
    /// (`SpareAttachments.link`); nil: each link makes its own.
    private let spares: SpareAttachments?
    private let statistics: StatisticsCounter
    private let settings: CacheSettings
    /// What a waiter waits for, as its failures say it: "the same URL was being fetched" (the engine's Android
    /// variants: "the same image's Android variant was being made").
    private let inFlight: String
    private let id = RandomName.uuid()
    /// `<root>/.cache-<id>`, made and opened at the first entry; its links are made and removed through it.
    private let linksDirectory = LockedValue<Directory?>(nil)
    private let state: LockedValue<CacheState<CheckedContinuation<Shared, Never>>>

    /// What a waiter is told when the fetch it waited for ends.
    private enum Shared: Sendable {
        case media(CacheEntry)
        case failure(FetchFailure)
        /// The leader's own deadline or cancellation ended it: try again under your own deadline.
        case retry
    }

    /// A cache in front of `source`, keeping its links under `root` (the root `source` stores into), each payload's
    /// link in a directory from `spares` when given (the fetcher's, over the same root), counting its lookups in
    /// `statistics`.
    package init(
        source: any MediaSource, root: AttachmentRoot, spares: SpareAttachments? = nil, statistics: StatisticsCounter,
        settings: CacheSettings, inFlight: String = "the same URL was being fetched"
    ) {
        self.inFlight = inFlight
        self.source = source
        store = root
        self.spares = spares
        self.statistics = statistics
        self.settings = settings
        state = LockedValue(CacheState(settings: settings))
    }

    /// An attachment of `url` for one payload, by `deadline`: linked from the cache, from a fetch in flight, or
    /// fetched now.
    package func attachment(for url: String, deadline: ContinuousClock.Instant) async -> Result<
        FetchedMedia, FetchFailure
    > {
        await attachment(for: url, deadline: deadline, from: source)
    }

    /// An attachment of what `key` names for one payload, by `deadline`, made by `source` (given `key` as its URL)
    /// when the cache holds none and no other payload is making it: the same single flight, links and bounds for
    /// what is not a URL (the engine's Android variants, by their source's SHA-256).
    package func attachment(
        for key: String, deadline: ContinuousClock.Instant, from source: any MediaSource
    ) async -> Result<FetchedMedia, FetchFailure> {
        let url = key
        // Whether this URL had an entry whose first payload's file was gone: a second sight, linked when fetched.
        var seenBefore = false
        // A retry happens only when a leader gave up under its own deadline; three bound the loop.
        for _ in 0..<3 {
            let now = ContinuousClock.now
            // A lookup past the deadline leads no fetch (which would end `expired` at once, counted as a miss with
            // nothing fetched) and waits for none.
            guard deadline > now else { return .failure(.deadlinePassedBeforeStart) }
            switch state.withLock({ $0.plan(url, now: now) }) {
            case .use(let entry):
                if let linked = attach(entry, url: url) {
                    statistics.record { $0.cacheHits += 1 }
                    return .success(linked)
                }
                // The cached file is gone (gc, a vanished root, the first payload's caller): forget it and fetch.
                forget(url)
                seenBefore = true
            case .lead(let stale):
                return await lead(url, deadline: deadline, stale: stale, seenBefore: seenBefore, source: source)
            case .wait:
                switch await wait(for: url, until: deadline) {
                case .media(let entry):
                    if let linked = attach(entry, url: url) {
                        statistics.record { $0.cacheHits += 1 }
                        return .success(linked)
                    }
                case .failure(let failure):
                    return .failure(failure)
                case .retry:
                    continue
                }
            }
        }
        // Three leaders gave up under their own deadlines: fetched apart from the cache, and counted as a miss.
        statistics.record { $0.cacheMisses += 1 }
        return await source.unconditionalFetch(url, deadline: deadline)
    }

    /// Fetches `url` for the waiters, caches the result, and hands it over.
    private func lead(
        _ url: String, deadline: ContinuousClock.Instant, stale: CacheEntry?, seenBefore: Bool,
        source: any MediaSource
    ) async -> Result<FetchedMedia, FetchFailure> {
        let outcome = await source.fetch(url, deadline: deadline, validators: stale?.media.validators ?? Validators())
        let now = ContinuousClock.now
        if case .notModified = outcome {
            statistics.record { $0.cacheRevalidations += 1 }
        } else {
            statistics.record { $0.cacheMisses += 1 }
        }
        switch outcome {
        case .stored(let media):
            // Wanted twice (payloads wait for it, or it was fetched before): the cache links it now.
            let wanted = seenBefore || stale != nil || state.withLock { $0.hasWaiters(url) }
            let entry =
                wanted
                ? cache(media).map { CacheEntry(media: $0, linked: true, fetchedAt: now, lastUsed: now) }
                : CacheEntry(media: media, linked: false, fetchedAt: now, lastUsed: now)
            settle(url, entry: entry, tell: entry.map { .media($0) } ?? .retry, replacing: stale)
            return .success(media)
        case .notModified(let validators):
            // Asked again: the cache links the first payload's file now if it had not.
            var kept = stale.flatMap { $0.linked ? $0 : promoted($0) }
            // The 304's validators replace those stored (the next revalidation sends what the origin sent last).
            if let stored = kept?.media.validators, validators.etag != nil || validators.lastModified != nil {
                kept?.media.validators = Validators(
                    etag: validators.etag ?? stored.etag, lastModified: validators.lastModified ?? stored.lastModified)
            }
            guard var entry = kept, let linked = link(entry.media) else {
                if let made = kept?.link, stale?.linked == false { unlinkCached(made) }
                settle(url, entry: nil, tell: .retry, replacing: stale)
                statistics.record { $0.cacheMisses += 1 }
                return await source.unconditionalFetch(url, deadline: deadline)
            }
            entry.fetchedAt = now
            entry.lastUsed = now
            settle(url, entry: entry, tell: .media(entry), replacing: stale)
            return .success(linked)
        case .failed(let failure) where stale != nil && Self.servesStale(after: failure):
            // The origin failing for now (a 5xx, a connection refused, dropped or not made): the copy it had serves
            // this payload and its waiters (stale-if-error), and stays to be revalidated by the next one.
            settle(url, entry: stale, tell: .media(stale!), replacing: stale)
            if let linked = attach(stale!, url: url) { return .success(linked) }
            return .failure(failure)
        case .failed(let failure) where failure.code == .expired || failure.code == .cancelled:
            // Cut by this payload's deadline: a stale copy stays, with its validators, for the next to revalidate.
            settle(url, entry: stale, tell: .retry, replacing: stale)
            return .failure(failure)
        case .failed(let failure):
            settle(url, entry: nil, tell: .failure(failure), replacing: stale)
            return .failure(failure)
        }
    }

    /// Whether a revalidation that ended with `failure` leaves the stale copy to serve: the origin failing for now
    /// (a 5xx, a connection refused, dropped or not made), not one that answered what it has no more (a 404).
    private static func servesStale(after failure: FetchFailure) -> Bool {
        switch failure.cause {
        case .connectionRefused?, .connectionDropped?, .connectTimeout?: return true
        case .status(let status, _)?: return (500...599).contains(status)
        case nil: return false
        }
    }

    /// Ends the fetch in flight for `url`: caches `entry` (or nothing), unlinks what it replaced or evicted, and
    /// wakes every waiter with `tell`.
    private func settle(_ url: String, entry: CacheEntry?, tell: Shared, replacing stale: CacheEntry?) {
        let settled = state.withLock { $0.settle(url, entry: entry, replacing: stale) }
        for path in settled.unlink { unlinkCached(path) }
        for waiter in settled.waiters { waiter.resume(returning: tell) }
    }

    private func forget(_ url: String) {
        if let path = state.withLock({ $0.forget(url) }) { unlinkCached(path) }
    }

    /// Waits for the fetch in flight for `url`, or for `deadline`, or for cancellation, whichever comes first.
    private func wait(for url: String, until deadline: ContinuousClock.Instant) async -> Shared {
        let id = state.withLock { $0.nextWaiterID() }
        return await withTaskGroup(of: Shared?.self) { group in
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Shared, Never>) in
                        let registered = self.state.withLock { state -> Bool in
                            !Task.isCancelled && state.addWaiter(continuation, id: id, for: url)
                        }
                        if !registered { continuation.resume(returning: .retry) }
                    }
                } onCancel: {
                    self.state.withLock { $0.removeWaiter(id: id, for: url) }?.resume(returning: .retry)
                }
            }
            group.addTask {
                try? await Task.sleep(until: deadline, clock: .continuous)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            if let first { return first }
            // The sleeper ended first: the deadline came, or this task was cancelled.
            if ContinuousClock.now >= deadline {
                return .failure(FetchFailure(.expired, "the deadline came while \(inFlight)"))
            }
            return .failure(FetchFailure(.cancelled, "cancelled while \(inFlight)"))
        }
    }

    /// The cache directory, made and opened at the first entry, and again once it is gone; nil when it cannot be
    /// made (the cache then keeps nothing).
    private func cacheDirectory() -> Directory? {
        linksDirectory.withLock { directory in
            if directory == nil { directory = try? store.makeCacheDirectory(id) }
            return directory
        }
    }

    /// Whether `directory`, the cache directory, was removed (`richpush gc` takes one older than its age: an idle
    /// night at an hourly timer's setting); then it is let go of, and the next entry makes it again. Asked when a
    /// link in it failed: before, every link failed from then on, and each payload fetched its URL again.
    private func forgetIfRemoved(_ directory: Directory) -> Bool {
        guard directory.isRemoved else { return false }
        linksDirectory.withLock { if $0 === directory { $0 = nil } }
        return true
    }

    /// The name of a cached file in the cache directory (`<root>/.cache-<id>/<name>`).
    private func cachedName(_ path: String) -> String {
        // On the UTF-8 bytes: this runs for every cache hit, and splitting the path by characters was 5% of the
        // service's pool threads in its profile.
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return path }
        return String(path[path.utf8.index(after: slash)...])
    }

    private func unlinkCached(_ path: String) {
        if let directory = linksDirectory.withLock({ $0 }) { unlinkat(directory.descriptor, cachedName(path), 0) }
    }

    /// Keeps a hard link to a fetched file in the cache directory; nil when the disk refuses, or, when `verifying`
    /// (the first payload's file, handed to its caller since: `promoted`), when it is no longer what was fetched.
    private func cache(_ media: FetchedMedia, verifying: Bool = false) -> FetchedMedia? {
        let root = store.directory.path + "/"
        guard let opened = cacheDirectory(), media.path.hasPrefix(root) else { return nil }
        // The fetched file is `<root>/<uuid>/<name>`: linked through its directory's descriptor, not by its path.
        let fetched = media.path.dropFirst(root.count).split(separator: "/", omittingEmptySubsequences: false)
        guard fetched.count == 2,
            let source = try? Directory(opening: String(fetched[0]), in: store.directory)
        else { return nil }
        let file = String(fetched[1])
        var identity: (device: UInt64, inode: UInt64)?
        if verifying {
            guard let intact = Self.intact(file, in: source, as: media) else { return nil }
            identity = intact
        }
        // One link per entry, not per content hash: evicting one URL must not unlink another URL's bytes.
        let name = RandomName.uuid() + "." + media.type.fileExtension
        var directory = opened
        if (try? directory.link(file, from: source, as: name)) == nil {
            // Once more in a new cache directory when the old one was removed.
            guard forgetIfRemoved(directory), let made = cacheDirectory(),
                (try? made.link(file, from: source, as: name)) != nil
            else { return nil }
            directory = made
        }
        // The file verified is the file linked (not one swapped in between).
        if let identity {
            guard let linked = directory.status(of: name), UInt64(linked.st_dev) == identity.device,
                UInt64(linked.st_ino) == identity.inode
            else {
                unlinkat(directory.descriptor, name, 0)
                return nil
            }
        }
        var cached = media
        cached.path = directory.path + "/" + name
        cached.directory = directory.path
        return cached
    }

    /// The device and inode of `name` in `directory` when it is still the file `media` was fetched as: a regular
    /// file (not a link put in its place), of its size and SHA-256. The first payload's caller has had it: one that
    /// edited it in place or by rename (an optimizer, exiftool), or put a link there, gave every later payload of
    /// the URL its own bytes, or a file outside the root. Read once per URL, at its second sight.
    private static func intact(_ name: String, in directory: Directory, as media: FetchedMedia) -> (
        device: UInt64, inode: UInt64
    )? {
        guard
            case .success(let descriptor) = FileSystem.openRegularFile(
                name, in: directory.descriptor, followingLinks: false)
        else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, Int(info.st_size) == media.bytes else { return nil }
        var buffer = FileSystem.readBuffer(count: FileDigest.chunkBytes)
        guard FileDigest.of(descriptor, buffer: &buffer)?.sha256 == media.sha256 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    /// A new attachment for one payload from `entry` of `url`: linked to the cache's own link, made first from the
    /// first payload's file when the entry has none yet; nil when the file is gone.
    private func attach(_ entry: CacheEntry, url: String) -> FetchedMedia? {
        if entry.linked { return link(entry.media) }
        guard let kept = promoted(entry) else { return nil }
        // Record the link, unless another payload did first (or the entry changed): then drop ours.
        let recorded = state.withLock { $0.recordLink(kept.media, for: url, replacing: entry.media.path) }
        defer { if !recorded { unlinkCached(kept.media.path) } }
        return link(kept.media)
    }

    /// `entry` with a cache link of its own to the first payload's file; nil when that file is gone.
    private func promoted(_ entry: CacheEntry) -> CacheEntry? {
        guard let media = cache(entry.media, verifying: true) else { return nil }
        var kept = entry
        kept.media = media
        kept.linked = true
        return kept
    }

    /// A new attachment for one payload, linked to the cached file; nil when the cached file is gone.
    private func link(_ cached: FetchedMedia) -> FetchedMedia? {
        guard let cache = cacheDirectory() else { return nil }
        guard let (directory, path) = try? linkAttachment(cachedName(cached.path), in: cache, cached.type.fileExtension)
        else {
            // The cached file is gone: with its directory, perhaps, which the next entry then makes again.
            _ = forgetIfRemoved(cache)
            return nil
        }
        var media = cached
        media.path = path
        media.directory = directory
        return media
    }

    /// A new attachment directory holding a link to `name` in the cache directory.
    private func linkAttachment(_ name: String, in cache: Directory, _ fileExtension: String) throws(StoreError) -> (
        directory: String, path: String
    ) {
        if let spares { return try spares.link(name, in: cache, fileExtension: fileExtension) }
        return try store.link(name, in: cache, fileExtension: fileExtension)
    }

    /// Gives the entry of `url` the cache's own link to `media` when the entry is still that file, the first
    /// payload's: the engine is about to remove it (an Android reference's source, replaced by its variant), and the
    /// next payload of the URL would otherwise fetch it again. Not checked as `promoted` checks: no caller has had it.
    package func keep(_ media: FetchedMedia, of url: String) {
        guard let entry = state.withLock({ $0.entry(url) }), !entry.linked, entry.media.path == media.path,
            let kept = cache(entry.media)
        else { return }
        if !state.withLock({ $0.recordLink(kept, for: url, replacing: entry.media.path) }) { unlinkCached(kept.path) }
    }

    /// Removes the cache directory (attachments handed out keep their own links).
    package func removeAll() {
        state.withLock { $0.removeAll() }
        store.directory.removeTree(".cache-" + id)
    }
}
