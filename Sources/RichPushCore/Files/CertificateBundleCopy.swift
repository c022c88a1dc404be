import CSystem

#if canImport(Glibc)
    import Glibc
#endif

/// A private copy of a CA bundle given by path (`--ca-bundle`, `--s3-ca-bundle`), which libcurl reads in its stead:
/// a file in memory (memfd), named to libcurl by `/proc/self/fd/N`.
///
/// libcurl opens a CAINFO path itself, with a blocking `open`, on the thread of the transfer that needs it: the fetch
/// loop's, at the first TLS connection and again when its store of certificates is older than
/// `CURLOPT_CA_CACHE_TIMEOUT`. A bundle checked at start and then replaced by a FIFO held that thread in `open` until
/// something wrote into the FIFO: no transfer ended, plain http's neither, and SIGTERM went unanswered (658 s in a
/// probe). Here the bundle is read as every file a user names is, a regular file opened without blocking
/// (`FileSystem.readCertificateBundle`), and what libcurl opens is a file of our own.
///
/// The bundle is read again when the copy is older than `refreshInterval` (an hour, as libcurl's cache): changed, it
/// goes into a new copy at a new path, which makes libcurl (whose cache is kept by path) read it at its next
/// connection, so that a CA rotated on disk is trusted within the hour; unchanged, the path stays and libcurl keeps
/// its store. A bundle that cannot be read again (removed, a FIFO, no certificate left) keeps the copy last read.
/// A replaced copy stays open for `retention` (a day, the longest deadline) for transfers that were given its path;
/// every copy is closed when this object goes.
///
/// Where no copy can be made (no memfd, no /proc), `path` is the bundle's own, as before.
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

    private struct Copy {
        let descriptor: Int32
        let path: String
        let bytes: [UInt8]
    }

    private struct State {
        var current: Copy?
        var readAt: ContinuousClock.Instant
        var replaced: [(descriptor: Int32, at: ContinuousClock.Instant)] = []
    }

    /// The bundle's own path.
    package let bundle: String
    private let refreshInterval: Duration
    private let retention: Duration
    private let state: LockedValue<State>

    /// A copy of `bundle` read now; with no copy (the file unreadable since it was checked, or no memfd), `path` is
    /// `bundle` itself, except for a bundle that cannot be read, which gets an empty copy: libcurl then fails the
    /// TLS connection (`tls`) rather than open it.
    package init(
        of bundle: String, refreshInterval: Duration = defaultRefreshInterval, retention: Duration = defaultRetention,
        now: ContinuousClock.Instant = .now
    ) {
        self.bundle = bundle
        self.refreshInterval = refreshInterval
        self.retention = retention
        let bytes: [UInt8]
        switch FileSystem.readCertificateBundle(bundle) {
        case .success(let read): bytes = read
        case .failure: bytes = []
        }
        state = LockedValue(State(current: Self.copy(bytes), readAt: now))
    }

    deinit {
        state.withLock { state in
            if let current = state.current { close(current.descriptor) }
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

    /// Reads the bundle again at `now`, whatever the copy's age.
    package func readAgain(now: ContinuousClock.Instant = .now) {
        state.withLock { state in refresh(&state, now: now) }
    }

    /// The descriptors this copy holds: its current copy's and those replaced, not yet closed (tests).
    package var descriptorsHeld: Int {
        state.withLock { state in (state.current == nil ? 0 : 1) + state.replaced.count }
    }

    /// The path libcurl is to read the bundle from at `now` (its CAINFO): the current copy's, after reading the
    /// bundle again when the copy is older than the refresh interval.
    package func path(now: ContinuousClock.Instant = .now) -> String {
        state.withLock { state in
            if now - state.readAt >= refreshInterval { refresh(&state, now: now) }
            return state.current?.path ?? bundle
        }
    }

    /// Reads the bundle again into `state`: a new copy when its bytes changed; closes the copies replaced longer
    /// than `retention` ago.
    private func refresh(_ state: inout State, now: ContinuousClock.Instant) {
        state.readAt = now
        state.replaced.removeAll { replaced in
            guard now - replaced.at >= retention else { return false }
            close(replaced.descriptor)
            return true
        }
        guard case .success(let bytes) = FileSystem.readCertificateBundle(bundle), bytes != state.current?.bytes,
            let copy = Self.copy(bytes)
        else { return }
        if let current = state.current { state.replaced.append((current.descriptor, now)) }
        state.current = copy
    }

    /// `bytes` in a new file in memory, or nil where none can be made.
    private static func copy(_ bytes: [UInt8]) -> Copy? {
        let descriptor = csystem_memory_file("richpush-ca-bundle")
        guard descriptor >= 0 else { return nil }
        guard bytes.withUnsafeBytes({ FileSystem.writeAll(descriptor, $0) }) == nil else {
            close(descriptor)
            return nil
        }
        return Copy(descriptor: descriptor, path: "/proc/self/fd/\(descriptor)", bytes: bytes)
    }
}
