import FixtureOrigin
import Foundation
import RichPushCore
import Testing

@testable import RichPush
@testable import RichPushFetch
@testable import RichPushMedia
@testable import RichPushStore

/// A body that opens with a common image's or video's signature has its type decided on the fetch loop's thread as
/// its first bytes arrive (`BodySniffer.sniff(_:atOnce:completion:)`), within the loop's time for that a turn; every
/// other body's head goes to the sniffer's thread, as before. Either way the outcome is the same. On a loop of the
/// test's own, so that the test can count the verdicts reached at once (`SniffService.decidedAtOnce`).
@Suite("Types decided at once on the loop's thread", .timeLimit(.minutes(1)))
struct SniffAtOnceTests {
    /// `body` with a bed, a loop of its settings and the loop's `SniffService` (deciding at once for at most `atOnce`
    /// a turn); the loop is stopped after, whether or not `body` throws.
    private static func withLoop(
        atOnce: Duration = FetchLoop.defaultSniffingAtOnce,
        _ body: (TestBed, FetchLoop, SniffService) async throws -> Void
    ) async throws {
        let bed = try TestBed()
        let sniffer = try SniffService()
        let loop = try bed.fetchLoop(sniffer: sniffer, sniffingAtOnce: atOnce)
        do {
            try await body(bed, loop, sniffer)
        } catch {
            await loop.stop()
            throw error
        }
        await loop.stop()
    }

    /// The type of the body delivered, or the failure's code and detail.
    private static func result(_ outcome: TransferOutcome) -> String {
        switch outcome {
        case .stored(let body): return "\(body.type.fileExtension) \(body.bytes)"
        case .held(let body): return "\(body.type.fileExtension) \(body.bytes.count)"
        case .failed(let failure): return "\(failure.code.rawValue): \(failure.detail)"
        case .notModified: return "not modified"
        case .probed(let type, let bytes, _, _): return "probed \(type.fileExtension) \(bytes)"
        }
    }

    /// Each fixture, fetched (or probed) on `loop` one after another, with the result `result` gives.
    private static func fetch(
        _ names: [String], on loop: FetchLoop, _ bed: TestBed, probe: Bool = false
    ) async -> [String] {
        var results: [String] = []
        for name in names {
            let outcome = await loop.fetch(
                TransferRequest(url: bed.url("/media/\(name)"), deadline: .now + .seconds(20), probe: probe))
            results.append(Self.result(outcome))
        }
        return results
    }

    /// Fixtures with a signature the loop judges at once: longer than the 4 KiB head (a JPEG, a GIF, an MP4) and
    /// shorter (a PNG, whose whole body is its head, judged once curl has finished), and the results they give.
    private static let signed = ["photo.jpg", "anim.gif", "clip.mp4", "logo.png"]
    private static let signedResults = [
        "jpg \(fixture("photo.jpg").count)", "gif \(fixture("anim.gif").count)", "mp4 \(fixture("clip.mp4").count)",
        "png \(fixture("logo.png").count)",
    ]

    @Test("a common image's or video's type is decided at once; any other body's on the sniffer's thread")
    func decidedAtOnce() async throws {
        try await Self.withLoop { bed, loop, sniffer in
            #expect(await Self.fetch(Self.signed, on: loop, bed) == Self.signedResults)
            #expect(sniffer.decidedAtOnce.load(ordering: .relaxed) == Self.signed.count)
            // An HTML error page and an MP3 carry no signature the loop judges: their verdicts come from the thread.
            let others = await Self.fetch(["error-page.html", "chime.mp3"], on: loop, bed)
            #expect(others.first?.hasPrefix("unsupported-type: text/html") == true, "\(others)")
            #expect(others.last == "mp3 \(fixture("chime.mp3").count)", "\(others)")
            #expect(sniffer.decidedAtOnce.load(ordering: .relaxed) == Self.signed.count)
        }
    }

    @Test("with no time a turn for it, every type is decided on the sniffer's thread, with the same outcomes")
    func noTimeForIt() async throws {
        try await Self.withLoop(atOnce: .zero) { bed, loop, sniffer in
            #expect(await Self.fetch(Self.signed, on: loop, bed) == Self.signedResults)
            #expect(sniffer.decidedAtOnce.load(ordering: .relaxed) == 0)
        }
    }

    @Test("a probe's type is decided at once too, its result the same")
    func probedAtOnce() async throws {
        try await Self.withLoop { bed, loop, sniffer in
            let probed = await Self.fetch(["photo.jpg", "logo.png", "error-page.html"], on: loop, bed, probe: true)
            #expect(probed.count == 3 && probed[0] == "probed jpg \(fixture("photo.jpg").count)", "\(probed)")
            #expect(probed[1] == "probed png \(fixture("logo.png").count)", "\(probed)")
            #expect(probed[2].hasPrefix("unsupported-type: text/html"), "\(probed)")
            #expect(sniffer.decidedAtOnce.load(ordering: .relaxed) == 2)
        }
    }

    @Test("a held body refused at once (WebP without a converter) gives its memory back and leaves nothing on disk")
    func heldRefusedAtOnce() async throws {
        try await Self.withLoop { bed, loop, sniffer in
            // Shorter than the head: judged as curl ends, the body held in memory until then.
            let results = await Self.fetch(["banner.webp", "anim.webp"], on: loop, bed)
            #expect(results.allSatisfy { $0.hasPrefix("unsupported-type: image/webp") }, "\(results)")
            #expect(sniffer.decidedAtOnce.load(ordering: .relaxed) == 2)
            #expect(loop.bodyMemory.inUse == 0)
            #expect(bed.filesOnDisk().isEmpty, "left behind: \(bed.filesOnDisk())")
        }
    }

    @Test("every turn of the loop has its time again: heads that each overrun it, one a turn, are all decided at once")
    func timeEveryTurn() async throws {
        let bed = try TestBed()
        let sniffer = SlowSniffer(verdict: .supported(.jpeg), takes: .milliseconds(3))
        let loop = try bed.fetchLoop(sniffer: sniffer, sniffingAtOnce: .milliseconds(1))
        defer { loop.stop {} }
        // One after another, so each head comes in a turn of its own; each check takes three times the allowance.
        let results = await Self.fetch(["photo.jpg", "photo.jpg", "photo.jpg"], on: loop, bed)
        #expect(results == Array(repeating: "jpg \(fixture("photo.jpg").count)", count: 3))
        #expect(sniffer.counts == SlowSniffer.Counts(atOnce: 3, later: 0))
        await loop.stop()
    }

    @Test("a verdict at once that refuses the body ends the transfer then, and leaves nothing on disk")
    func refusedAtOnce() async throws {
        try await Self.withLoop { bed, loop, sniffer in
            // A JPEG's head on a body that declares more than the image cap (10 MB) but sends 12 MB: refused as the
            // head's verdict is applied, not when the bytes pass the cap.
            let outcome = await loop.fetch(
                TransferRequest(
                    url: bed.url("/generated?prefix=photo.jpg&bytes=12000000&type=image/jpeg"),
                    deadline: .now + .seconds(20)))
            let result = Self.result(outcome)
            #expect(result.hasPrefix("too-large: declares 12000000 bytes"), "\(result)")
            #expect(sniffer.decidedAtOnce.load(ordering: .relaxed) == 1)
            #expect(bed.filesOnDisk().isEmpty, "left behind: \(bed.filesOnDisk())")
        }
    }

    @Test("the signatures judged at once: JPEG, PNG, GIF, WebP, WAV, AVI, AIFF, ISO media; nothing else or cut short")
    func signatures() {
        let riff = Array("RIFF".utf8) + [0, 0, 0, 0]
        let judged: [[UInt8]] = [
            [0xFF, 0xD8, 0xFF, 0xE0], [0x89] + Array("PNG\r\n".utf8) + [0x1A, 0x0A], Array("GIF87a".utf8),
            Array("GIF89a".utf8), riff + Array("WEBP".utf8), [0, 0, 0, 0x18] + Array("ftypheic".utf8),
            riff + Array("WAVE".utf8), riff + Array("AVI ".utf8),
            Array("FORM".utf8) + [0, 0, 0, 0] + Array("AIFF".utf8),
        ]
        for head in judged { #expect(SniffService.opensWithMediaSignature(head), "\(head)") }
        let others: [[UInt8]] = [
            [], [0xFF, 0xD8], [0x89] + Array("PNG\r\n".utf8) + [0x1A], Array("GIF88a".utf8), riff + Array("RMID".utf8),
            Array("FORM".utf8) + [0, 0, 0, 0] + Array("AIFC".utf8), riff + Array("WAV".utf8),
            Array("RIFF".utf8), [0, 0, 0, 0x18] + Array("fty".utf8), Array("ID3".utf8) + [4, 0, 0],
            Array("<html><body>".utf8), Array("\u{FEFF}<svg".utf8),
        ]
        for head in others { #expect(!SniffService.opensWithMediaSignature(head), "\(head)") }
    }

    @Test("at once, libmagic answers only quick questions: the MIME type; the description of an image to convert")
    func quickQuestions() throws {
        let sniffer = try Sniffer()
        func both(_ head: [UInt8]) -> (quick: Sniffer.QuickCheck, full: Sniffer.Verdict?) {
            head.withUnsafeBytes { (sniffer.quickCheck($0), sniffer.check($0)) }
        }
        // Settled by the MIME type, or by the description of an image to convert: the verdict `check` gives.
        for name in ["photo.jpg", "logo.png", "anim.gif", "clip.mp4", "banner.webp", "photo.heic"] {
            let (quick, full) = both(Array(fixture(name).prefix(4096)))
            #expect(full != nil && quick == .verdict(full!), "\(name): \(quick) against \(String(describing: full))")
        }
        let png = [0x89] + Array("PNG\r\n".utf8) + [0x1A, 0x0A]
        // Data: named on the thread, not described here.
        let data = both(png + [UInt8](repeating: 0x20, count: 4088))
        #expect(data.quick == .needsNaming && data.full == nil, "\(data)")
        // A refused type whose verdict names it with the description (here an MS-DOS executable's marker, 0xCD 0x21,
        // at offset 70): left to the thread.
        var dos = png + [UInt8](repeating: UInt8(ascii: "P"), count: 4088)
        dos[70] = 0xCD
        dos[71] = 0x21
        let refused = both(dos)
        #expect(refused.quick == .undecided, "\(refused)")
        guard case .unsupported(let detail) = refused.full else {
            Issue.record("\(refused)")
            return
        }
        #expect(detail.hasPrefix("application/x-dosexec"), "\(detail)")
    }

    @Test("a head with a signature that libmagic can only call data is named on the sniffer's thread")
    func signedButNamed() throws {
        let service = try SniffService()
        defer { service.stop() }
        // A PNG's signature, then spaces: libmagic without its text checks can only call it data.
        let head = [0x89] + Array("PNG\r\n".utf8) + [0x1A, 0x0A] + [UInt8](repeating: 0x20, count: 4088)
        let later = LockedValue<Sniffer.Verdict?>(nil)
        #expect(service.sniff(head, atOnce: true) { verdict in later.update { $0 = verdict } } == nil)
        let verdict = try #require(later.wait(timeout: .seconds(30)) { $0 }, "no verdict from the thread in 30 s")
        guard case .unsupported(let detail) = verdict else {
            Issue.record("\(verdict)")
            return
        }
        #expect(!detail.contains("not named"), "\(detail)")
        #expect(service.decidedAtOnce.load(ordering: .relaxed) == 0)
    }

    @Test("while the sniffer's thread holds libmagic to name text, a head is not judged at once: the thread judges it")
    func busySniffer() async throws {
        let service = try SniffService()
        defer { service.stop() }
        let photo = Array(fixture("photo.jpg").prefix(4096))
        let first = service.sniff(photo, atOnce: true) { _ in Issue.record("a verdict at once came back later") }
        #expect(first == .supported(.jpeg))
        // Text bodies to name, ~10 ms each on the service's thread, which holds the sniffer meanwhile: queued from
        // here, not from another task, so that they are queued whatever the cooperative pool is doing.
        let newlines = [UInt8](repeating: 0x0A, count: 4096)
        let named = LockedValue(0)
        for _ in 0..<SniffService.maximumNaming {
            #expect(service.sniff(newlines, atOnce: true) { _ in named.update { $0 += 1 } } == nil)
        }
        // Until a head finds the sniffer held (bounded: the namings take about 0.6 s in all); the thread then
        // judges it.
        let end = ContinuousClock.now + .seconds(30)
        var judged = 0
        while true {
            try #require(ContinuousClock.now < end, "no head found the sniffer held in 30 s (\(judged) judged)")
            let later = LockedValue<Sniffer.Verdict?>(nil)
            let atOnce = service.sniff(photo, atOnce: true) { verdict in later.update { $0 = verdict } }
            if let verdict = atOnce {
                #expect(verdict == .supported(.jpeg))
                judged += 1
                continue
            }
            let verdict = try #require(later.wait(timeout: .seconds(30)) { $0 }, "no verdict from the thread")
            #expect(verdict == .supported(.jpeg))
            break
        }
        try #require(named.wait(timeout: .seconds(30)) { $0 == SniffService.maximumNaming ? true : nil } == true)
        // Free again once the namings are done.
        #expect(service.sniff(photo, atOnce: true) { _ in } == .supported(.jpeg))
    }
}

/// A sniffer whose every check at once takes `takes` (a sleep on the caller's thread) and gives `verdict`; the
/// others it answers from a thread of its own. Counts both.
private final class SlowSniffer: BodySniffer {
    struct Counts: Equatable {
        var atOnce = 0
        var later = 0
    }

    private let verdict: SniffVerdict
    private let takes: Duration
    private let tally = LockedValue(Counts())

    init(verdict: SniffVerdict, takes: Duration) {
        self.verdict = verdict
        self.takes = takes
    }

    var counts: Counts { tally.withLock { $0 } }

    func sniff(
        _ head: [UInt8], atOnce: Bool, completion: @escaping @Sendable (SniffVerdict) -> Void
    ) -> SniffVerdict? {
        if atOnce {
            tally.withLock { $0.atOnce += 1 }
            Thread.sleep(forTimeInterval: Double(takes.components.attoseconds) / 1e18)
            return verdict
        }
        tally.withLock { $0.later += 1 }
        let verdict = verdict
        Thread.detachNewThread { completion(verdict) }
        return nil
    }

    func stop() {}
}
