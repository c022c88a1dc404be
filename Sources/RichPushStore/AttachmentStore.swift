import RichPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Where attachments are written: each in its own new directory `<root>/<uuid>/` (mode 0700), holding
/// `<uuid>.<ext>`, written under a hidden partial name and renamed into place only when complete.
///
/// No part of a path comes from a URL or a server: every name is a UUID we make. The root is opened once per
/// `Fetcher` (made, mode 0700, when missing) and refused unless it is a directory of this user alone: not a
/// symbolic link, owned by the effective user, not writable by group or others. Everything under it is made
/// relative to that open descriptor.
public struct AttachmentStore: Sendable, Hashable {
    /// The attachments root.
    public let root: String

    /// A store under `root`. The root is opened, and made (mode 0700) when missing, once per `Fetcher`.
    public init(root: String) {
        self.root = root
    }

    /// The default root, one per user: `$TMPDIR/richpush-<uid>`, or `/tmp/richpush-<uid>` when TMPDIR is unset
    /// (Debian's default), `<uid>` being the effective user's. One shared `/tmp/richpush` was refused to every user
    /// but the first (it is that user's, mode 0700); TMPDIR may be shared too, so the uid is in the name either way.
    public static var defaultRoot: String {
        perUserRoot(temporaryDirectory: getenv("TMPDIR").map { String(cString: $0) }, user: geteuid())
    }

    /// Why the default root is not an absolute path (attachment paths handed back are absolute): TMPDIR is
    /// relative; nil when it is not.
    package static var defaultRootProblem: String? {
        let root = defaultRoot
        guard !root.hasPrefix("/") else { return nil }
        let temporary = TerminalText.printable(getenv("TMPDIR").map { String(cString: $0) } ?? "")
        return "TMPDIR ('\(temporary)') is relative, and the default root is $TMPDIR/richpush-<uid>"
    }

    /// The default root for this TMPDIR (nil or empty when unset) and effective user id.
    package static func perUserRoot(temporaryDirectory: String?, user: uid_t) -> String {
        FileSystem.temporaryDirectory(TMPDIR: temporaryDirectory) + "/richpush-\(user)"
    }

    /// Opens the root, making it (mode 0700, missing parents too) when it does not exist; see `AttachmentRoot`.
    /// - Throws: `StoreError` naming the root and why it is refused: a symbolic link, not a directory, owned by
    ///   another user, writable by group or others, or the system's reason.
    package func open() throws(StoreError) -> AttachmentRoot {
        try AttachmentRoot(opening: root)
    }

    /// Removes attachment directories under the root whose last change is older than `age`; returns how many, and
    /// those not all gone with the first thing left in each and why. One whose last change is more than
    /// `aheadMargin` ahead of the clock (set back since: a machine that booted with its clock years ahead, then
    /// corrected) has an age nobody can tell; its last change is set to now, so that it is removed once `age` has
    /// passed from now rather than kept until the clock reaches its date (`GarbageCollection.redated`; one that cannot
    /// be, on another mount or refused, is among those left). None is removed for it: it may be in use.
    /// Only directories named as this store names them (a UUID, `.cache-<UUID>` for a media cache's links,
    /// which a running cache re-creates and refills, or `.spare-<UUID>`, a spare left by a process that did not
    /// shut down) are touched. The root is opened and checked as for writing
    /// (a missing one has nothing to remove), and everything under it is removed by descriptors: a link is
    /// removed, never followed, and nothing on another device (a mount) is entered.
    /// - Throws: `StoreError` when the root is refused or cannot be listed.
    public func collectGarbage(olderThan age: Duration) throws(StoreError) -> GarbageCollection {
        guard let directory = try AttachmentRoot(existing: root)?.directory else {
            return GarbageCollection(removed: 0, left: [])
        }
        // In nanoseconds since the epoch, saturating, so that no age traps: one beyond the epoch takes nothing. An age
        // of 0 (or less) takes every directory, one changed this very second or later (a clock set back) too.
        let current = Self.now()
        let (difference, overflow) = current.subtractingReportingOverflow(
            Self.nanoseconds(Int(age.components.seconds), Int(age.components.attoseconds / 1_000_000_000)))
        let cutoff = overflow ? Int64.min : difference
        var removed = 0
        var redated = 0
        var left: [GarbageCollection.Leftover] = []
        for name in try directory.names() {
            let hidden = [".cache-", AttachmentRoot.sparePrefix].first { name.hasPrefix($0) }
            let id = hidden.map { String(name.dropFirst($0.count)) } ?? name
            guard RandomName.isUUID(id), let info = directory.status(of: name), (info.st_mode & S_IFMT) == S_IFDIR
            else { continue }
            let changed = Self.nanoseconds(info.st_mtim.tv_sec, info.st_mtim.tv_nsec)
            guard age <= .zero || changed < cutoff else {
                // Against the clock now, not the walk's start: one made meanwhile is not ahead.
                guard age > .zero, changed > Self.now().addingReportingOverflow(Self.aheadMargin).partialValue
                else { continue }
                if let leftover = directory.markChangedNow(name) {
                    left.append(leftover)
                } else {
                    redated += 1
                }
                continue
            }
            if let leftover = directory.removeTree(name) {
                left.append(leftover)
            } else {
                removed += 1
            }
        }
        return GarbageCollection(removed: removed, left: left, redated: redated)
    }

    /// How far ahead of the clock a directory's last change must be to be dated now: a minute (a directory made by
    /// a process while gc lists, a file server's clock a little ahead, are not).
    static let aheadMargin: Int64 = 60_000_000_000

    /// The clock's time now (CLOCK_REALTIME, which file times follow), in nanoseconds since the epoch.
    private static func now() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return nanoseconds(now.tv_sec, now.tv_nsec)
    }

    /// `seconds` and `nanoseconds` as nanoseconds, saturating.
    private static func nanoseconds(_ seconds: Int, _ nanoseconds: Int) -> Int64 {
        let (scaled, overflow) = Int64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? Int64.min : Int64.max }
        let (total, overflowAgain) = scaled.addingReportingOverflow(Int64(nanoseconds))
        return overflowAgain ? Int64.max : total
    }
}

/// What `AttachmentStore.collectGarbage(olderThan:)` did: how many old attachment directories it removed, and
/// which it could not remove whole. A gc timer should not let the second go unnoticed: `richpush gc` names each
/// and exits 1.
public struct GarbageCollection: Sendable, Equatable {
    /// An old attachment directory not all gone: the first thing left in it, and why.
    public struct Leftover: Sendable, Equatable, CustomStringConvertible {
        /// The path of what is left (a name that is not UTF-8 is shown with U+FFFD).
        public let path: String
        /// Why: the system's reason (a directory that cannot be opened, listed or removed), or that another file
        /// system is mounted there, or that it is deeper than removal goes: either is not entered.
        public let reason: String

        public var description: String { "\(path): \(reason)" }
    }

    /// How many old attachment directories were removed whole.
    public let removed: Int
    /// The old attachment directories not all gone, and those dated ahead of the clock that could not be dated now, in
    /// the order they were met.
    public let left: [Leftover]
    /// How many attachment directories dated ahead of the clock were dated now instead (kept, and removed once the
    /// age has passed from now).
    public let redated: Int

    package init(removed: Int, left: [Leftover], redated: Int = 0) {
        self.removed = removed
        self.left = left
        self.redated = redated
    }
}
