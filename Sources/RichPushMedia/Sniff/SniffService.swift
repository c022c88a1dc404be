import RichPushCore
import RichPushFetch

/// Sniffs bodies off the fetch loop's thread, so that no body, however slow for libmagic, holds the loop.
///
/// One thread (`WorkerThreads`) with one `Sniffer`: libmagic's database costs 8 MB of memory per handle, and a
/// check takes well under 2 ms. The naming step of a refused body (libmagic's text checks, ~10 ms on 512 bytes of
/// newlines) waits until no check is queued, so text bodies never delay an image behind them: the bodies to name
/// wait here, and one item at a time names the first of them, queued again behind the checks while any wait.
/// Completions run on the service's thread.
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
    /// Touched only on `thread`'s one thread.
    private nonisolated(unsafe) let sniffer: Sniffer

    /// Refused bodies waiting to be named, at most; beyond it a refusal is reported unnamed at once. Naming
    /// costs ~10 ms (measured), so a flood of text bodies cannot queue more than ~0.6 s of work or 256 KB.
    static let maximumNaming = 64

    init() throws(SnifferError) {
        sniffer = try Sniffer()
    }

    /// Decides the type of a body from its first bytes; `completion` is called once, on the service's thread,
    /// unless the service has stopped.
    func sniff(_ head: [UInt8], completion: @escaping Completion) {
        thread.submit { [self] turn in
            if case .run = turn { check(Job(head: head, completion: completion)) }
        }
    }

    /// Ends the thread; queued work is dropped.
    func stop() {
        thread.shutdown(.refuse)
    }

    private func check(_ job: Job) {
        if let verdict = job.head.withUnsafeBytes({ sniffer.check($0) }) {
            job.completion(verdict)
            return
        }
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
        job.completion(job.head.withUnsafeBytes { sniffer.name($0) })
        let more = naming.withLock { naming -> Bool in
            naming.queued = !naming.jobs.isEmpty
            return naming.queued
        }
        if more { thread.submit { [self] turn in nameNext(turn) } }
    }
}
