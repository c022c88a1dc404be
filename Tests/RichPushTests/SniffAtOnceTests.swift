import FixtureOrigin
import Foundation
import RichPushCore
import Testing

@testable import RichPush
@testable import RichPushFetch
@testable import RichPushMedia
@testable import RichPushStore

/// A body that opens with a common image's or video's signature has its type decided on the fetch loop's thread as
/// its first bytes arrive (`BodySniffer.decideAtOnce`), within the loop's time for that a turn; every other body's
/// head goes to the sniffer's thread, as before. Either way the outcome is the same. On a loop of the test's own, so
/// that the test can count the verdicts reached at once (`SniffService.decidedAtOnce`).
@Suite("Types decided at once on the loop's thread", .timeLimit(.minutes(1)))
struct SniffAtOnceTests {
    /// A loop with `bed`'s settings deciding at once for at most `atOnce` a turn, and its sniffer; stopped by the
    /// caller.
    private static func loop(_ bed: TestBed, atOnce: Duration = FetchLoop.defaultSniffingAtOnce) throws -> (
        FetchLoop, SniffService
    ) {
        let configuration = bed.configuration
        let spares = SpareAttachments(root: try configuration.store.open(), makesAhead: false)
        let sniffer = try SniffService()
        let loop = FetchLoop(
            settings: FetchSettings(
                network: configuration.network, limits: configuration.limits, spares: spares,
                caps: BodyCaps(limits: configuration.limits, transform: configuration.transform)),
            sniffer: sniffer, sniffingAtOnce: atOnce)
        return (loop, sniffer)
    }

    /// The type of the body delivered, or the failure's code and detail.
    private static func result(_ outcome: TransferOutcome) -> String {
        switch outcome {
        case .stored(let body): return "\(body.type.fileExtension) \(body.bytes)"
        case .held(let body): return "\(body.type.fileExtension) \(body.bytes.count)"
        case .failed(let failure): return "\(failure.code.rawValue): \(failure.detail)"
        case .notModified: return "not modified"
        case .probed: return "probed"
        }
    }

    /// Each fixture, fetched on `loop`, with the result `result` gives.
    private static func fetch(_ names: [String], on loop: FetchLoop, _ bed: TestBed) async -> [String] {
        var results: [String] = []
        for name in names {
            let outcome = await loop.fetch(
                TransferRequest(url: bed.url("/media/\(name)"), deadline: .now + .seconds(20)))
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
        let bed = try TestBed()
        let (loop, sniffer) = try Self.loop(bed)
        defer { loop.stop {} }
        #expect(await Self.fetch(Self.signed, on: loop, bed) == Self.signedResults)
        #expect(sniffer.decidedAtOnce.load(ordering: .relaxed) == Self.signed.count)
        // An HTML error page and an MP3 carry no signature the loop judges: their verdicts come from the thread.
        let others = await Self.fetch(["error-page.html", "chime.mp3"], on: loop, bed)
        #expect(others.first?.hasPrefix("unsupported-type: text/html") == true, "\(others)")
        #expect(others.last == "mp3 \(fixture("chime.mp3").count)", "\(others)")
        #expect(sniffer.decidedAtOnce.load(ordering: .relaxed) == Self.signed.count)
        await loop.stop()
    }

    @Test("with no time a turn for it, every type is decided on the sniffer's thread, with the same outcomes")
    func noTimeForIt() async throws {
        let bed = try TestBed()
        let (loop, sniffer) = try Self.loop(bed, atOnce: .zero)
        defer { loop.stop {} }
        #expect(await Self.fetch(Self.signed, on: loop, bed) == Self.signedResults)
        #expect(sniffer.decidedAtOnce.load(ordering: .relaxed) == 0)
        await loop.stop()
    }

    @Test("a verdict at once that refuses the body ends the transfer then, and leaves nothing on disk")
    func refusedAtOnce() async throws {
        let bed = try TestBed()
        let (loop, sniffer) = try Self.loop(bed)
        defer { loop.stop {} }
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
        await loop.stop()
    }

    @Test("the signatures judged at once: JPEG, PNG, GIF, WebP, ISO media; nothing else, nothing cut short")
    func signatures() {
        let riff = Array("RIFF".utf8) + [0, 0, 0, 0]
        let judged: [[UInt8]] = [
            [0xFF, 0xD8, 0xFF, 0xE0], [0x89] + Array("PNG\r\n".utf8) + [0x1A, 0x0A], Array("GIF87a".utf8),
            Array("GIF89a".utf8), riff + Array("WEBP".utf8), [0, 0, 0, 0x18] + Array("ftypheic".utf8),
        ]
        for head in judged { #expect(SniffService.opensWithMediaSignature(head), "\(head)") }
        let others: [[UInt8]] = [
            [], [0xFF, 0xD8], [0x89] + Array("PNG\r\n".utf8) + [0x1A], Array("GIF88a".utf8), riff + Array("WAVE".utf8),
            Array("RIFF".utf8), [0, 0, 0, 0x18] + Array("fty".utf8), Array("ID3".utf8) + [4, 0, 0],
            Array("<html><body>".utf8), Array("\u{FEFF}<svg".utf8),
        ]
        for head in others { #expect(!SniffService.opensWithMediaSignature(head), "\(head)") }
    }

    @Test("while the sniffer's thread holds libmagic (naming text), a head is not judged at once: it waits its turn")
    func busySniffer() async throws {
        let service = try SniffService()
        defer { service.stop() }
        let photo = Array(fixture("photo.jpg").prefix(4096))
        #expect(service.decideAtOnce(photo) == .supported(.jpeg))
        // Text bodies to name, ~10 ms each on the service's thread, which holds the sniffer meanwhile.
        let newlines = [UInt8](repeating: 0x0A, count: 4096)
        let named = Task {
            await withTaskGroup(of: Sniffer.Verdict.self) { group in
                for _ in 0..<SniffService.maximumNaming {
                    group.addTask {
                        await withCheckedContinuation { continuation in
                            service.sniff(newlines) { continuation.resume(returning: $0) }
                        }
                    }
                }
                return await group.reduce(into: 0) { count, _ in count += 1 }
            }
        }
        // Until a head finds the sniffer held (bounded: the namings take about 0.6 s in all).
        let end = ContinuousClock.now + .seconds(30)
        var declined = 0
        var judged = 0
        while declined == 0 {
            try #require(ContinuousClock.now < end, "no head found the sniffer held in 30 s (\(judged) judged)")
            if let verdict = service.decideAtOnce(photo) {
                #expect(verdict == .supported(.jpeg))
                judged += 1
            } else {
                declined += 1
            }
        }
        #expect(await named.value == SniffService.maximumNaming)
        // Free again once the namings are done.
        #expect(service.decideAtOnce(photo) == .supported(.jpeg))
    }
}
