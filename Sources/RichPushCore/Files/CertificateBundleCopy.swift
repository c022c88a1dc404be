import CSystem
import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// A private copy of a CA bundle given by path (`--ca-bundle`, `--s3-ca-bundle`), which libcurl reads in its stead:
/// a sealed file in memory (memfd), named to libcurl by `/proc/self/fd/N`, or where no such file can be made (no
/// memfd, no /proc) the bundle's bytes themselves (CURLOPT_CAINFO_BLOB).
///
/// libcurl opens a CAINFO path itself, with a blocking `open`, on the thread of the transfer that needs it: the fetch
/// loop's, at the first TLS connection and again when its store of certificates is older than
/// `CURLOPT_CA_CACHE_TIMEOUT`. A bundle checked at start and then replaced by a FIFO held that thread in `open` until
/// something wrote into the FIFO: no transfer ended, plain http's neither, and SIGTERM went unanswered (658 s in a
/// probe). Here the bundle is read as every file a user names is, a regular file opened without blocking
/// (`FileSystem.readCertificateBundle`), and what libcurl reads is a file of our own, which nothing can change once
/// written (its seals), or bytes in memory. Bytes cost more: libcurl keeps the store it read from a path (for
/// `CURLOPT_CA_CACHE_TIMEOUT`), never one read from a blob, so each TLS connection reads the bundle again.
///
/// The bundle is read again when the copy is older than `refreshInterval` (an hour, as libcurl's cache), off the
/// thread that asked (the fetch loop's: a bundle on a stalled network mount would hold it): until that read ends, the
/// copy last read is given. Changed, the bundle goes into a new copy at a new path, which makes libcurl (whose cache
/// is kept by path) read it at its next connection, so that a CA rotated on disk is trusted within the hour;
/// unchanged, the path stays and libcurl keeps its store. A bundle that cannot be read again (removed, a FIFO, no
/// certificate left) keeps the copy last read. A replaced copy stays open for `retention` (a day, the longest
/// deadline) for transfers that were given its path; every copy is closed when this object goes.
///
/// Settings take the process's one copy of a bundle (`shared(of:)`): libcurl keeps one store of certificates per multi
/// handle, for the path it was read from, and tenants sharing a loop with copies of their own at two paths would make
/// it read its store again at each connection that alternates between them.
package final class CertificateBundleCopy: Sendable {
    /// How often the bundle is read again: an hour (`EasyHandle.caCacheSeconds`).
    package static let defaultRefreshInterval = Duration.seconds(3600)
    /// How long a replaced copy stays open: a day and an hour, past the longest deadline a transfer may have
    /// (`Enricher.Configuration.deadlineRange`, up to a day; keep this above it).
    package static let defaultRetention = Duration.seconds(25 * 3600)

    /// Where libcurl reads the certificates trusted.
    package enum Source: Equatable, Sendable {
        /// A path to give CURLOPT_CAINFO: the copy in memory's.
        case path(String)
        /// The bundle's bytes, to give CURLOPT_CAINFO_BLOB, where no copy in memory can be made.
        case bytes([UInt8])
    }

    /// Runs a read of the bundle again, off the thread that found the copy old.
    package typealias Reader = @Sendable (_ read: @escaping @Sendable () -> Void) -> Void

    /// Reads on a thread of Dispatch's global pool (not Swift's cooperative one: the read may block).
    package static let backgroundReader: Reader = { read in DispatchQueue.global(qos: .utility).async(execute: read) }

    private struct Copy {
        /// The memory file's descriptor; nil for bytes alone.
        let descriptor: Int32?
        let source: Source
        let bytes: [UInt8]
    }

    private struct State {
        var current: Copy
        var readAt: ContinuousClock.Instant
        /// Whether a read given to `reader` has not ended: no other is given meanwhile.
        var reading = false
        /// The reads started, in order, and the latest of them taken: one that ends after a later one was taken
        /// (a read stalled, then `readAgain`) is dropped, never put back in place of the later one's bytes.
        var started = 0
        var taken = 0
        var replaced: [(descriptor: Int32, at: ContinuousClock.Instant)] = []
    }

    /// The bundle's own path.
    package let bundle: String
    private let refreshInterval: Duration
    private let retention: Duration
    private let memoryFiles: Bool
    private let reader: Reader
    private let state: LockedValue<State>

    /// A copy of `bundle` read now. A bundle that cannot be read (changed since it was checked) gets an empty copy:
    /// libcurl then fails the TLS connection (`tls`) rather than open the path. `memoryFiles` false makes copies of
    /// bytes alone, as where no memfd or /proc is (tests); `reader` runs the reads after the first.
    package init(
        of bundle: String, refreshInterval: Duration = defaultRefreshInterval, retention: Duration = defaultRetention,
        memoryFiles: Bool = true, reader: @escaping Reader = backgroundReader, now: ContinuousClock.Instant = .now
    ) {
        self.bundle = bundle
        self.refreshInterval = refreshInterval
        self.retention = retention
        self.memoryFiles = memoryFiles
        self.reader = reader
        let bytes: [UInt8]
        switch FileSystem.readCertificateBundle(bundle) {
        case .success(let read): bytes = read
        case .failure: bytes = []
        }
        state = LockedValue(State(current: Self.copy(bytes, memoryFile: memoryFiles), readAt: now))
    }

    deinit {
        state.withLock { state in
            if let descriptor = state.current.descriptor { close(descriptor) }
            for replaced in state.replaced { close(replaced.descriptor) }
        }
    }

    /// The copies `shared(of:)` made, by the bundle's path; never released (a process names few bundles).
    private static let copies = LockedValue([String: CertificateBundleCopy]())

    /// The process's copy of `bundle`, read again now when it already was (new settings read the bundle as it is).
    /// Copies are kept by the bundle's canonical path (`realpath`), so that `ca.pem` and `/etc/app/ca.pem` given by
    /// two tenants are one copy at one path.
    package static func shared(of bundle: String) -> CertificateBundleCopy {
        let key: String
        if let resolved = realpath(bundle, nil) {
            key = String(cString: resolved)
            free(resolved)
        } else {
            key = bundle
        }
        return copies.withLock { copies in
            if let copy = copies[key] {
                copy.readAgain()
                return copy
            }
            let copy = CertificateBundleCopy(of: bundle)
            copies[key] = copy
            return copy
        }
    }

    /// Reads the bundle again at `now`, whatever the copy's age, on the caller's thread.
    package func readAgain(now: ContinuousClock.Instant = .now) {
        read(now: now, given: false)
    }

    /// The descriptors this copy holds: its current copy's and those replaced, not yet closed (tests).
    package var descriptorsHeld: Int {
        state.withLock { state in (state.current.descriptor == nil ? 0 : 1) + state.replaced.count }
    }

    /// Where libcurl is to read the bundle from at `now` (its CAINFO, or CAINFO_BLOB): the current copy's. When the
    /// copy is older than the refresh interval and no read is under way, the bundle is read again through `reader`
    /// first: what it has installed when it returns is given.
    package func source(now: ContinuousClock.Instant = .now) -> Source {
        let current = state.withLock { state -> Source? in
            guard !state.reading, now - state.readAt >= refreshInterval else { return state.current.source }
            state.reading = true
            return nil
        }
        if let current { return current }
        reader { [self] in read(now: now, given: true) }
        return state.withLock { state in state.current.source }
    }

    /// Reads the bundle again (the file read outside the lock), then takes it as the copy of `now` unless a read
    /// started later was taken first: a new copy when its bytes changed (or the copy is bytes alone where a file in
    /// memory may be made: one that could not be made, out of descriptors, is tried again); closes the copies
    /// replaced longer than `retention` ago. `given`: the read `source` gave `reader`.
    private func read(now: ContinuousClock.Instant, given: Bool) {
        let order = startRead()
        let began = ContinuousClock.now
        take(FileSystem.readCertificateBundle(bundle), order: order, began: began, now: now, given: given)
    }

    /// The order of a read starting now.
    func startRead() -> Int {
        state.withLock { state in
            state.started += 1
            return state.started
        }
    }

    /// Takes what the read of `order`, begun at `began`, read (see `read(now:given:)`).
    func take(
        _ read: Result<[UInt8], FileSystem.CertificateBundleProblem>, order: Int, began: ContinuousClock.Instant,
        now: ContinuousClock.Instant, given: Bool
    ) {
        state.withLock { state in
            if given { state.reading = false }
            guard order > state.taken else { return }
            state.taken = order
            state.readAt = now
            // Replaced as this read ends, in the clock `now` is of: a transfer may have been given the old path
            // until then.
            let replacedAt = now + (ContinuousClock.now - began)
            state.replaced.removeAll { replaced in
                guard replacedAt - replaced.at >= retention else { return false }
                close(replaced.descriptor)
                return true
            }
            guard case .success(let bytes) = read,
                bytes != state.current.bytes || (memoryFiles && state.current.descriptor == nil)
            else { return }
            if let descriptor = state.current.descriptor { state.replaced.append((descriptor, replacedAt)) }
            state.current = Self.copy(bytes, memoryFile: memoryFiles)
        }
    }

    /// `bytes` in a new sealed file in memory, or where none can be made (or `memoryFile` is false), bytes alone.
    private static func copy(_ bytes: [UInt8], memoryFile: Bool) -> Copy {
        let alone = Copy(descriptor: nil, source: .bytes(bytes), bytes: bytes)
        guard memoryFile else { return alone }
        let descriptor = csystem_memory_file("richpush-ca-bundle")
        guard descriptor >= 0 else { return alone }
        guard bytes.withUnsafeBytes({ FileSystem.writeAll(descriptor, $0) }) == nil,
            csystem_seal_memory_file(descriptor) == 0
        else {
            close(descriptor)
            return alone
        }
        return Copy(descriptor: descriptor, source: .path("/proc/self/fd/\(descriptor)"), bytes: bytes)
    }
}
