import CTestSupport
import FixtureOrigin
import Foundation
// The helpers every test target shares (`waitUntil`), visible in every file of this one.
@_exported import RichPushTestSupport
import RichPushTransform
import Testing

@testable import RichPush
@testable import RichPushStore

/// A loopback origin over the fixture media, an attachments directory of its own, and a configuration that
/// may reach the origin (http allowed, 127.0.0.1 opened, `media.test` pinned to it).
final class TestBed: Sendable {
    let origin: HTTPOrigin
    let attachments: String
    let configuration: Enricher.Configuration

    /// libvips, opened before main by CTestSupport (opening it holds the dynamic loader's locks, which stall thread
    /// creation across the process); opened here, by the first bed, only if that failed, so that the tests that
    /// need it fail with libvips's own reason.
    static let libvips: Void = {
        if ctestsupport_libvips_status() != 0 { VipsConverter().prepare() }
    }()

    /// A bed whose origin serves `media` (default: `Fixtures/media`).
    init(
        media: String = FixtureRoutes.fixturesDirectory + "/media",
        _ adjust: (inout Enricher.Configuration) -> Void = { _ in }
    ) throws {
        _ = Self.libvips
        origin = try HTTPOrigin(handler: FixtureRoutes.handler(mediaDirectory: media))
        attachments = NSTemporaryDirectory() + "richpush-tests-" + UUID().uuidString
        var configuration = Enricher.Configuration()
        configuration.network.allowHTTP = true
        configuration.network.addressPolicy = AddressPolicy(allowed: [CIDRRange("127.0.0.1/32")!])
        configuration.network.resolve = ["media.test:\(origin.port):127.0.0.1"]
        configuration.network.allowedPorts = [1...65535]
        configuration.store = AttachmentStore(root: attachments)
        adjust(&configuration)
        self.configuration = configuration
    }

    deinit {
        let (origin, attachments) = (origin, attachments)
        // Stopping the origin joins its thread and removing the directory waits on the disk: neither may hold the
        // cooperative thread that drops the last reference (two on this machine; a busy disk held one for
        // seconds, and every timed test in the process waited).
        Janitor.shared.later {
            origin.stop()
            try? FileManager.default.removeItem(atPath: attachments)
        }
    }

    /// `http://media.test:PORT/path`, a name pinned to the loopback origin.
    func url(_ path: String) -> String { "http://media.test:\(origin.port)\(path)" }

    /// Every file under the attachments root, relative paths, hidden ones (partial files) included, except
    /// the media cache's own links (see `cacheFiles()`).
    func filesOnDisk() -> [String] {
        entriesOnDisk().filter {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: attachments + "/" + $0, isDirectory: &isDirectory)
            return !isDirectory.boolValue
        }
    }

    /// Every entry (files and directories) under the attachments root, except the media cache's and the spares
    /// made ahead (`.spare-<uuid>`: no attachment's until taken; `SpareAttachmentsTests` checks that none is left
    /// at shutdown).
    func entriesOnDisk() -> [String] {
        entries(under: "") { !$0.hasPrefix(".cache-") && !$0.hasPrefix(AttachmentRoot.sparePrefix) }
    }

    /// The media cache's links (`.cache-<uuid>/<sha256>.<ext>`).
    func cacheFiles() -> [String] {
        entries(under: "") { $0.hasPrefix(".cache-") }.filter { $0.contains("/") }
    }

    /// The entries under `folder` (relative to the root; "" for the root itself), relative paths, the root's own
    /// names that `keep` refuses neither listed nor entered. Read by `readdir` (`contentsOfDirectory`), never by
    /// `FileManager.enumerator`: that walks with glibc's fts under `FTS_NOSTAT | FTS_PHYSICAL`, which counts a
    /// directory's subdirectories by its link count when it stats it and, once it has seen that many, takes every
    /// later entry for a file and does not enter it. The spare maker (`SpareAttachments`) makes `.spare-<uuid>`
    /// directories in the root while a test lists it, so an attachment's directory read after them was listed
    /// without its file (a few of a full run's `filesOnDisk()` counts came short by one or two).
    private func entries(under folder: String, keep: (String) -> Bool = { _ in true }) -> [String] {
        let path = folder.isEmpty ? attachments : attachments + "/" + folder
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter(keep)
        return names.flatMap { name -> [String] in
            let entry = folder.isEmpty ? name : folder + "/" + name
            // lstat: a link is listed, never followed (as the enumerator's `FTS_PHYSICAL` did).
            var info = stat()
            let isDirectory = lstat(attachments + "/" + entry, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
            return [entry] + (isDirectory ? entries(under: entry) : [])
        }
    }

    /// A payload with `adb_media` set to `url`, mutable.
    /// A file `directory/name` holding a mutable payload whose `adb_media` is this bed's `path`; its path.
    func adobePayloadFile(_ path: String, in directory: String, named name: String) throws -> String {
        let file = directory + "/" + name
        try Data(#"{"aps":{"mutable-content":1},"adb_media":"\#(url(path))"}"#.utf8).write(
            to: URL(fileURLWithPath: file))
        return file
    }

    /// A wrapped FCM v1 message: this bed's photo.jpg as `notification.image`, its clip.mp4 as Android's own image
    /// (a video, which Android refuses), and `apns` (JSON text, `URL` standing for the bed's `/media/logo.png`).
    func fcmMessageWithVideoForAndroid(apns: String) throws -> PushPayload {
        let text =
            #"{"message":{"token":"t","notification":{"image":"\#(url("/media/photo.jpg"))"},"#
            + #""android":{"notification":{"image":"\#(url("/media/clip.mp4"))"}},"apns":"#
            + apns.replacingOccurrences(of: "URL", with: url("/media/logo.png")) + "}}"
        return try PushPayload(parsing: Array(text.utf8))
    }

    static func adobePayload(_ url: String) -> PushPayload {
        try! PushPayload(parsing: Array(#"{"aps":{"alert":"hi","mutable-content":1},"adb_media":"\#(url)"}"#.utf8))
    }
}

/// The SHA-256 of a file, by the system's sha256sum (an independent check of our streaming hash), run off the
/// cooperative pool.
func sha256sum(_ path: String) async throws -> String {
    try await offPool {
        let summed = try ChildProcess.runToEnd("/usr/bin/sha256sum", [path])
        return summed.outputText.split(separator: " ").first.map(String.init) ?? ""
    }
}

/// The inode of a file: two attachments with one inode are hard links to the same stored bytes.
func inode(_ path: String) throws -> UInt64 {
    try #require(try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? UInt64)
}

/// Blocking clean-up handed off by code that runs on the cooperative pool and cannot wait (a `deinit`), done in
/// order on a thread of its own, and finished before the test process exits (`atexit`), so nothing is left behind.
final class Janitor: Sendable {
    static let shared: Janitor = {
        let janitor = Janitor()
        atexit { Janitor.shared.finish() }
        return janitor
    }()

    private let queue = DispatchQueue(label: "richpush-tests.janitor")
    private let group = DispatchGroup()

    /// Runs `work` on the janitor's thread, after what was handed over before it.
    func later(_ work: @escaping @Sendable () -> Void) {
        queue.async(group: group, execute: work)
    }

    /// Waits for everything handed over (at most 60 s: a clean-up never holds the process's exit for ever).
    func finish() {
        _ = group.wait(timeout: .now() + 60)
    }
}

// MARK: - Waiting and time

/// A control for a result due at `instant`: a task of this process that sleeps until the same instant, then
/// queues for the cooperative pool as many more times as a result does on its way back to the caller (the fetch
/// loop resumes the fetching task, which ends its task group's child, which resumes the caller: `hops`). When the
/// pool is busy (the suite runs its tests in parallel on two cores, or the machine is loaded), each of those waits
/// is long, and the control pays them at the same moments the result does. Deadline tests hold a result to the
/// control's arrival plus `deadlineSlack`, instead of a fixed margin that a loaded machine exceeds.
struct DeadlineControl: Sendable {
    /// Times a result due at an instant waits for the pool before its caller has it (the cache's waiters and a
    /// cancelled task's awaiting caller take the most).
    static let hops = 4

    let instant: ContinuousClock.Instant
    private let woke: Task<ContinuousClock.Instant, Never>

    init(at instant: ContinuousClock.Instant) {
        self.instant = instant
        woke = Task {
            try? await ContinuousClock().sleep(until: instant, tolerance: .zero)
            for _ in 1..<Self.hops { await Task.yield() }
            return .now
        }
    }

    /// Expects `arrived`, when a result due at `instant` arrived, to be no later than the control's arrival plus
    /// `deadlineSlack`.
    func expectOnTime(_ arrived: ContinuousClock.Instant, sourceLocation: SourceLocation = #_sourceLocation) async {
        let woke = await woke.value
        #expect(
            arrived <= woke + deadlineSlack,
            "arrived \(arrived - instant) after its deadline; the control \(woke - instant) after it",
            sourceLocation: sourceLocation)
    }
}

/// Fetches `path` through `enricher`, which then has it in its cache, removes the attachment it made, and returns
/// how long that took: for a small file, the unit by which a test scales what must happen in order on a loaded
/// machine (a request out before a deadline, a waiter arriving before it).
@discardableResult
func fetchOnce(_ path: String, through enricher: Enricher, on bed: TestBed) async throws -> Duration {
    let start = ContinuousClock.now
    let result = await enricher.enrich(TestBed.adobePayload(bed.url(path)), timeout: .seconds(10))
    let elapsed = ContinuousClock.now - start
    let media = try #require(result.attachments.first?.media, "fetching \(path): \(result.problems)")
    // A second payload, a cache hit, gives the entry the cache's own link (a URL seen once has none), so that
    // the URL stays cached once both attachments are removed.
    let again = await enricher.enrich(TestBed.adobePayload(bed.url(path)), timeout: .seconds(10))
    let linked = try #require(again.attachments.first?.media, "fetching \(path) again: \(again.problems)")
    for directory in [media.directory, linked.directory] { try FileManager.default.removeItem(atPath: directory) }
    return elapsed
}

/// What a result due at an instant may take beyond the control's arrival (see `DeadlineControl`): the fetch
/// loop's own wake-up (its poll ends 1 ms after the next deadline), settling the transfer and removing its partial
/// file, then resuming the caller. A few milliseconds unloaded; a deadline not enforced at all misses it by
/// seconds in every test that uses it (their servers would hold a transfer for 6 s or more).
let deadlineSlack: Duration = .milliseconds(250)

/// A loopback port that refuses connections for as long as this lives: a TCP socket bound to it and not listening.
/// A connection to it is reset at once, and no other test's server can take the port meanwhile (a port found by
/// starting and stopping an origin was taken by a server of a test running beside it, and the "refused"
/// request then succeeded).
final class RefusingPort {
    let port: Int
    private let descriptor: Int32

    init() throws {
        (descriptor, port) = try loopbackSocket()
    }

    deinit { close(descriptor) }
}
