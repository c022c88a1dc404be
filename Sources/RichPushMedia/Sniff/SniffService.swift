import RichPushCore
import RichPushFetch
import Synchronization

/// Sniffs bodies off the fetch loop's thread, so that no body, however slow for libmagic, holds the loop; or, for a
/// body that opens with the signature of a common image or video, on the loop's thread at once (`sniff(_:atOnce:)`).
///
/// One thread (`WorkerThreads`) with one `Sniffer`: libmagic's database costs 8 MB of memory per handle, and a
/// check takes well under 2 ms. The naming step of a refused body (libmagic's text checks, ~10 ms on 512 bytes of
/// newlines) waits until no check is queued, so text bodies never delay an image behind them: the bodies to name
/// wait here, and one item at a time names the first of them, queued again behind the checks while any wait.
/// Completions run on the service's thread.
///
/// The one `Sniffer` is shared under a lock: the loop's thread takes it only when it is free, so it never waits
/// behind a naming; the service's thread waits for it at most the loop's checks of a turn (`FetchLoop`'s
/// `sniffingAtOnce` and one check).
final class SniffService: BodySniffer {
    typealias Completion = @Sendable (Sniffer.Verdict) -> Void

    private struct Job: Sendable {
        var head: [UInt8]
        var completion: Completion
    }

    private struct Naming {
        var jobs: [Job] = []
        /// Whether an item that names them is queued or running (there is never more than one).
        var queued = false
    }

    private let thread = WorkerThreads(name: "rp-sniff")
    private let naming = LockedValue(Naming())
    /// Used on `thread`, and by `sniff(_:atOnce:completion:)` on the caller's thread when it is free.
    private let sniffer: LockedValue<Sniffer>
    /// How many verdicts were reached at once (for tests).
    let decidedAtOnce = Atomic<Int>(0)

    /// Refused bodies waiting to be named, at most; beyond it a refusal is reported unnamed at once. Naming
    /// costs ~10 ms (measured), so a flood of text bodies cannot queue more than ~0.6 s of work or 256 KB.
    static let maximumNaming = 64

    init() throws(SnifferError) {
        sniffer = LockedValue(try Sniffer())
    }

    /// Decides the type of a body from its first bytes; `completion` is called once, on the service's thread,
    /// unless the service has stopped.
    func sniff(_ head: [UInt8], completion: @escaping Completion) {
        thread.submit { [self] turn in
            if case .run = turn { check(Job(head: head, completion: completion)) }
        }
    }

    /// With `atOnce`, the verdict on the calling thread when `head` opens with the signature of a JPEG, PNG, GIF,
    /// WebP, WAV, AVI, AIFF or ISO media file (MP4, MOV, HEIC, AVIF, M4A), the sniffer is free, and the quick
    /// questions decide it (`Sniffer.quickCheck`: the MIME type, from the opening bytes (`MediaSignature`) or
    /// libmagic, and libmagic's description only for an image to convert the opening bytes do not name; WAV, AVI,
    /// AIFF and WebP are always named by their opening bytes). On such
    /// heads they are quick: 4 KiB heads of random or patterned bytes after each signature, libmagic 5.44, at most
    /// 0.10 ms after a JPEG's or a GIF's, 0.25 ms after `ftyp`, 0.46 ms after WebP's, 0.66 ms after PNG's for both
    /// questions (a helper's search over libmagic's own magic values planted in signed heads found none slower than
    /// 0.43 ms); a real JPEG's 8 us. Otherwise, nil, and `completion` has the verdict later, from the service's
    /// thread; a head the MIME type calls data goes straight to the naming, not checked again.
    func sniff(_ head: [UInt8], atOnce: Bool, completion: @escaping Completion) -> SniffVerdict? {
        let checked =
            atOnce && Self.opensWithMediaSignature(head)
            ? sniffer.withLockIfAvailable { sniffer in head.withUnsafeBytes { sniffer.quickCheck($0) } } : nil
        switch checked {
        case .verdict(let verdict):
            decidedAtOnce.add(1, ordering: .relaxed)
            return verdict
        case .needsNaming:
            name(Job(head: head, completion: completion))
        case .undecided, nil:
            sniff(head, completion: completion)
        }
        return nil
    }

    /// Whether `head` opens with one of the signatures judged at once (`MediaSignature.judgedAtOnce`).
    static func opensWithMediaSignature(_ head: [UInt8]) -> Bool {
        head.withUnsafeBytes { MediaSignature.judgedAtOnce($0) }
    }

    /// Ends the thread; queued work is dropped.
    func stop() {
        thread.shutdown(.refuse)
    }

    private func check(_ job: Job) {
        if let verdict = sniffer.withLock({ sniffer in job.head.withUnsafeBytes { sniffer.check($0) } }) {
            job.completion(verdict)
            return
        }
        name(job)
    }

    /// Queues a refused body that `check` could only call data to be named, or refuses it unnamed at once when
    /// `maximumNaming` wait.
    private func name(_ job: Job) {
        let (waiting, start) = naming.withLock { naming -> (Int?, Bool) in
            guard naming.jobs.count < Self.maximumNaming else { return (naming.jobs.count, false) }
            naming.jobs.append(job)
            defer { naming.queued = true }
            return (nil, !naming.queued)
        }
        if let waiting {
            let unnamed = "application/octet-stream (not named: \(waiting) refused bodies wait to be named)"
            job.completion(.unsupported(unnamed))
        }
        if start { thread.submit { [self] turn in nameNext(turn) } }
    }

    /// Names the first refused body when no check is queued; else goes behind the checks.
    private func nameNext(_ turn: WorkerThreads.Turn) {
        guard case .run = turn else { return }
        guard thread.waiting == 0 else {
            thread.submit { [self] turn in nameNext(turn) }
            return
        }
        let job = naming.withLock { $0.jobs.removeFirst() }
        job.completion(sniffer.withLock { sniffer in job.head.withUnsafeBytes { sniffer.name($0) } })
        let more = naming.withLock { naming -> Bool in
            naming.queued = !naming.jobs.isEmpty
            return naming.queued
        }
        if more { thread.submit { [self] turn in nameNext(turn) } }
    }
}
