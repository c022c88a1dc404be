import Foundation
import Testing

@testable import RichPush
@testable import RichPushStore

extension CLI {
    /// Runs the CLI with standard input read from `file`, by a shell's redirection: a CLI that exits before
    /// reading (a usage error, a refused root) cannot make writing to its input pipe kill this process
    /// (SIGPIPE).
    static func run(_ arguments: [String], inputFile file: String) async throws -> Run {
        let redirect = ["/bin/sh", "-c", #"exec "$0" "$@" < "\#(file)""#]
        return try await offPool { try runBlocking(arguments, stdin: nil, prefix: redirect) }
    }
}

extension TestBed {
    /// `cliOptions` without the attachments root, for tests that give their own.
    var networkOptions: [String] {
        var options = cliOptions
        if let index = options.firstIndex(of: "--attachments-dir") { options.removeSubrange(index...index + 1) }
        return options
    }
}

// Serialized: its CLI runs, all at once, would starve the suite's deadline tests on two cores.
@Suite("The attachments root: opened once, refused unless it is a directory of ours alone", .serialized)
struct RootTests {
    static let commands = ["enrich", "stream", "explain", "gc"]

    /// Runs `command` against `root`: a payload with one fetchable image for the three that fetch, and a gc
    /// that would take anything older than now.
    private func run(_ command: String, root: String, bed: TestBed, base: String) async throws -> CLI.Run {
        if command == "gc" { return try await CLI.run(["gc", "--older-than", "0", "--attachments-dir", root]) }
        let payload = base + "/payload.json"
        try Data(#"{"aps":{"mutable-content":1},"adb_media":"\#(bed.url("/media/logo.png"))"}"#.utf8)
            .write(to: URL(fileURLWithPath: payload))
        return try await CLI.run([command] + bed.networkOptions + ["--attachments-dir", root], inputFile: payload)
    }

    /// A root that is not a directory of ours alone.
    enum Unsafe: String, CaseIterable, Sendable {
        /// A link given with a slash after it (`root/`) or a `.` (`root/.`), which `O_NOFOLLOW` alone followed.
        case symbolicLink, symbolicLinkWithSlash, symbolicLinkWithDot, writableByOthers, ownedByAnother

        /// What the refusal says.
        var reason: String {
            switch self {
            case .symbolicLink, .symbolicLinkWithSlash, .symbolicLinkWithDot: "symbolic link"
            case .writableByOthers: "writable by group or others"
            case .ownedByAnother: "owned by uid 65534"
            }
        }

        /// Makes such a root in `base`, holding one old attachment directory (what gc would take); returns the
        /// path to give and the directory that holds the old one.
        func make(in base: String) throws -> (root: String, holder: String) {
            let root = base + "/root"
            let link = self == .symbolicLink || self == .symbolicLinkWithSlash || self == .symbolicLinkWithDot
            let holder = link ? base + "/target" : root
            let old = holder + "/" + attachmentName()
            try FileManager.default.createDirectory(atPath: old, withIntermediateDirectories: true)
            try makeOld(old)
            switch self {
            case .symbolicLink, .symbolicLinkWithSlash, .symbolicLinkWithDot:
                try FileManager.default.createSymbolicLink(atPath: root, withDestinationPath: holder)
            case .writableByOthers: #expect(chmod(root, 0o777) == 0)
            // We run as root: give the directory to nobody.
            case .ownedByAnother: #expect(chown(root, 65534, 65534) == 0)
            }
            return (
                self == .symbolicLinkWithSlash ? root + "/" : self == .symbolicLinkWithDot ? root + "/." : root, holder
            )
        }
    }

    @Test(
        """
        a root that is a link, writable by others or another user's is refused (exit 70, naming it and why); nothing \
        is made or removed in it
        """,
        arguments: commands, Unsafe.allCases)
    func unsafeRoot(command: String, unsafe: Unsafe) async throws {
        let bed = try TestBed()
        let base = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let (root, holder) = try unsafe.make(in: base)
        let before = entries(holder)
        let run = try await run(command, root: root, bed: bed, base: base)
        #expect(run.status == 70)
        // Named without the slash or dot given after it: the name opened.
        let named =
            root.hasSuffix("/") ? String(root.dropLast()) : root.hasSuffix("/.") ? String(root.dropLast(2)) : root
        #expect(run.stderr.contains(named) && run.stderr.contains(unsafe.reason), "stderr: \(run.stderr)")
        #expect(run.stderr.contains("(choose another root with --attachments-dir DIR)"), "stderr: \(run.stderr)")
        #expect(entries(holder) == before)
    }

    @Test("the default root is the user's own: $TMPDIR/richpush-<uid>, or /tmp/richpush-<uid> without TMPDIR")
    func defaultRootPerUser() {
        #expect(AttachmentStore.perUserRoot(temporaryDirectory: nil, user: 1000) == "/tmp/richpush-1000")
        #expect(AttachmentStore.perUserRoot(temporaryDirectory: "", user: 1001) == "/tmp/richpush-1001")
        #expect(AttachmentStore.perUserRoot(temporaryDirectory: "/var/tmp/", user: 0) == "/var/tmp/richpush-0")
    }

    @Test("gc without --attachments-dir reads the default root of this user, with TMPDIR set and unset")
    func defaultRootOfTheCLI() async throws {
        let base = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        // An age no directory reaches: gc removes nothing from a root other tests may use.
        let gc = ["gc", "--older-than", "3153600000"]
        for (environment, root) in [
            (["TMPDIR=" + base], base + "/richpush-\(geteuid())"), (["-u", "TMPDIR"], "/tmp/richpush-\(geteuid())"),
        ] {
            let run = try await offPool { try CLI.runBlocking(gc, stdin: nil, prefix: ["/usr/bin/env"] + environment) }
            #expect(run.status == 0, "stderr: \(run.stderr)")
            #expect(run.stdout == "removed 0 attachment directories from \(root)\n")
        }
    }

    @Test("a root writable by its group is refused when the fetcher is made, naming it and the mode")
    func groupWritableRoot() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(chmod(root, 0o770) == 0)
        var configuration = Enricher.Configuration()
        configuration.store = AttachmentStore(root: root)
        let error = #expect(throws: FetcherError.self) { try Fetcher(configuration: configuration) }
        #expect(error?.detail.contains(root) == true)
        #expect(error?.detail.contains("mode 770") == true)
    }

    @Test("a root whose last component is '..' is refused, naming it; one ending in '/.' or '/' is the directory")
    func dotRoots() throws {
        let base = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        try FileManager.default.createDirectory(atPath: base + "/sub", withIntermediateDirectories: false)
        let refused = #expect(throws: StoreError.self) { try AttachmentStore(root: base + "/sub/..").open() }
        #expect(refused?.detail.contains("\(base)/sub/.. is refused: its last component is '..'") == true)
        for given in [base + "/sub/.", base + "/sub/./", base + "/sub//"] {
            #expect(try AttachmentStore(root: given).open().directory.path == base + "/sub", "\(given)")
        }
    }

    @Test("a missing root is made when the fetcher is made, with its parents, mode 0700")
    func missingRoot() throws {
        let base = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let root = base + "/a/b/root"
        var configuration = Enricher.Configuration()
        configuration.store = AttachmentStore(root: root)
        try Fetcher(configuration: configuration).syncShutdown()
        for path in [base + "/a", root] {
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(mode == 0o700)
        }
    }

    /// The file attributes of the directory at `path` (FS_IOC_GETFLAGS), or nil where the file system has none.
    static func attributes(_ path: String) -> Int32? {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var flags: Int32 = 0
        return ioctl(descriptor, 0x8008_6601, &flags) == 0 ? flags : nil
    }

    /// Whether the file system under `directory` keeps the top-directory attribute (ext4 does, tmpfs does not).
    static func keepsTopDirectory(under directory: String) -> Bool {
        let probe = directory + "/probe"
        guard mkdir(probe, 0o700) == 0 else { return false }
        defer { rmdir(probe) }
        let descriptor = open(probe, O_RDONLY | O_DIRECTORY)
        defer { close(descriptor) }
        var flags: Int32 = 0
        guard ioctl(descriptor, 0x8008_6601, &flags) == 0 else { return false }
        flags |= 0x0002_0000
        return ioctl(descriptor, 0x4008_6602, &flags) == 0
    }

    @Test("a root we make is marked the top of unrelated trees (ext4's T attribute); one that exists is left as it is")
    func topDirectory() throws {
        let base = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        // Only where the file system keeps the attribute (this machine's ext4 /tmp; not a tmpfs).
        guard Self.keepsTopDirectory(under: base) else { return }
        let made = base + "/made"
        var configuration = Enricher.Configuration()
        configuration.store = AttachmentStore(root: made)
        try Fetcher(configuration: configuration).syncShutdown()
        #expect((Self.attributes(made) ?? 0) & 0x0002_0000 != 0, "the root richpush made")
        let existing = base + "/existing"
        try FileManager.default.createDirectory(
            atPath: existing, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        configuration.store = AttachmentStore(root: existing)
        try Fetcher(configuration: configuration).syncShutdown()
        #expect((Self.attributes(existing) ?? 0) & 0x0002_0000 == 0, "a root that existed is left alone")
    }

    @Test(
        "a root on a tmpfs makes its attachments on the loop's thread, no spares; one on the disk makes spares",
        .enabled(if: canMountTmpfs))
    func sparesOnlyOnDisk() async throws {
        try await withTmpfs(size: "16m") { point in
            for (root, inMemory) in [
                (point + "/attachments", true), (try temporaryDirectory() + "/attachments", false),
            ] {
                let bed = try TestBed { $0.store = AttachmentStore(root: root) }
                try await withFetcher(bed.configuration) { fetcher in
                    #expect(fetcher.root.isInMemory == inMemory, "\(root)")
                    #expect(fetcher.makesSpares == !inMemory, "\(root)")
                    let media = try await fetcher.fetch(bed.url("/media/photo.jpg"), timeout: .seconds(10)).get()
                    #expect(media.sha256 == (try await sha256sum(media.path)))
                    if !inMemory {
                        try await waitUntil("spares made ahead on the disk") {
                            entries(root).contains { $0.hasPrefix(AttachmentRoot.sparePrefix) }
                        }
                    } else {
                        #expect(!entries(root).contains { $0.hasPrefix(AttachmentRoot.sparePrefix) })
                    }
                }
            }
        }
    }

    @Test(
        "a root on a tmpfs still makes the media cache hits' directories ahead, on the spares' thread",
        .enabled(if: canMountTmpfs))
    func cacheDirectoriesAheadOnTmpfs() async throws {
        try await withTmpfs(size: "16m") { point in
            let root = point + "/attachments"
            let bed = try TestBed { $0.store = AttachmentStore(root: root) }
            try await withEnricher(bed.configuration) { enricher in
                #expect(enricher.fetcher.root.isInMemory)
                // The second is a hit: its link asks for directories ahead.
                for _ in 0..<2 {
                    let result = await enricher.enrich(
                        TestBed.adobePayload(bed.url("/media/logo.png")), timeout: .seconds(5))
                    #expect(result.outcome == .complete)
                }
                try await waitUntil("directories made ahead on the tmpfs") {
                    entries(root).contains { RandomName.isUUID($0) && entries(root + "/" + $0).isEmpty }
                }
            }
        }
    }

    @Test("a media cache directory swapped for a symbolic link: no file is made in the link's target")
    func swappedCacheDirectory() async throws {
        let bed = try TestBed()
        let outside = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: outside) }
        try await withEnricher(bed.configuration) { enricher in
            // Asked twice, the URL gets a cache link, and the cache its directory.
            for _ in 0..<2 {
                let first = await enricher.enrich(
                    TestBed.adobePayload(bed.url("/media/logo.png")), timeout: .seconds(5))
                #expect(first.outcome == .complete)
            }
            let cache = try #require(entries(bed.attachments).first { $0.hasPrefix(".cache-") })
            try FileManager.default.removeItem(atPath: bed.attachments + "/" + cache)
            try FileManager.default.createSymbolicLink(
                atPath: bed.attachments + "/" + cache, withDestinationPath: outside)
            let second = await enricher.enrich(TestBed.adobePayload(bed.url("/media/photo.jpg")), timeout: .seconds(5))
            #expect(second.outcome == .complete)
            #expect(entries(outside).isEmpty)
        }
    }
}
