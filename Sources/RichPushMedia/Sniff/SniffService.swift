import RichPushCore
import RichPushFetch

/// Sniffs bodies off the fetch loop's thread, so that no body, however slow for libmagic, holds the loop.
///
/// One thread of its own with one `Sniffer`: libmagic's database costs 8 MB of memory per handle, and a check
/// takes well under 2 ms. (A thread of its own, not a Dispatch queue: Dispatch's shared pool is as wide as the
/// machine has cores, and work queued behind other users of it waited seconds in the loaded test suite.) The
/// naming step of a refused body (libmagic's text checks, ~10 ms on 512 bytes of newlines) waits until no check is queued, so
/// text bodies never delay an image behind them. Completions run on the service's thread.
final class SniffService: BodySniffer {
    typealias Completion = @Sendable (Sniffer.Verdict) -> Void

    private struct Job {
        var head: [UInt8]
        var completion: Completion
    }

    private struct Pending {
        var checks: [Job] = []
        var naming: [Job] = []
        var stopped = false
    }

    private let pending = LockedValue(Pending())

    /// Refused bodies waiting to be named, at most; beyond it a refusal is reported unnamed at once. Naming
    /// costs ~10 ms (measured), so a flood of text bodies cannot queue more than ~0.6 s of work or 256 KB.
    static let maximumNaming = 64

    init() throws(SnifferError) {
        let sniffer = try Sniffer()
        let pending = pending
        // The thread owns the sniffer; it ends at `stop()`.
        nonisolated(unsafe) let owned = sniffer
        startDedicatedThread { Self.run(owned, pending) }
    }

    /// Decides the type of a body from its first bytes; `completion` is called once, on the service's thread,
    /// unless the service has stopped.
    func sniff(_ head: [UInt8], completion: @escaping Completion) {
        pending.update { $0.checks.append(Job(head: head, completion: completion)) }
    }

    /// Ends the thread; queued work is dropped.
    func stop() {
        pending.update { $0.stopped = true }
    }

    private static func run(_ sniffer: Sniffer, _ pending: LockedValue<Pending>) {
        while true {
            let next = pending.wait { pending -> (job: Job, isCheck: Bool)?? in
                if pending.stopped { return .some(nil) }
                if !pending.checks.isEmpty { return (pending.checks.removeFirst(), true) }
                if !pending.naming.isEmpty { return (pending.naming.removeFirst(), false) }
                return nil
            }
            guard let (job, isCheck) = next else { return }
            let verdict = job.head.withUnsafeBytes { head in isCheck ? sniffer.check(head) : sniffer.name(head) }
            if let verdict {
                job.completion(verdict)
                continue
            }
            let waiting = pending.update { pending -> Int? in
                guard pending.naming.count < Self.maximumNaming else { return pending.naming.count }
                pending.naming.append(job)
                return nil
            }
            if let waiting {
                job.completion(.unsupported("application/octet-stream (not named: \(waiting) refused bodies wait to be named)"))
            }
        }
    }
}
