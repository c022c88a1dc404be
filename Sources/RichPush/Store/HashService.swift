/// Hashes bodies (SHA-256) off the fetch loop's thread, on a thread of its own, while curl goes on receiving.
///
/// Measured (`perf record` of `stream`, bench (a), 2,000 bodies of 100 KB on tmpfs): OpenSSL's SHA-256 was 11.5%
/// of the process's CPU, all of it on the loop's thread, the one thread every transfer waits for. Each chunk is
/// copied (a memcpy, about a tenth of hashing it) and queued; the thread hashes the queue in order, so a body's
/// `finish` comes after all of its chunks. A body's file is never read back: the hash is of the bytes as they
/// arrived, as before.
///
/// Bounded: while more than `maximumQueuedBytes` wait, `update` blocks the loop's thread (back-pressure rather
/// than memory growing without bound when this thread is starved of CPU).
final class HashService: Sendable {
    /// One body's running hash; touched only on the service's thread (the loop only holds it).
    final class Digest: @unchecked Sendable {
        fileprivate let sha256 = SHA256()
    }

    private enum Job {
        case update(Digest, [UInt8])
        case finish(Digest, @Sendable (String) -> Void)
    }

    private struct Pending {
        var jobs: [Job] = []
        var queuedBytes = 0
        var stopped = false
        /// Whether the thread was started (at the first job: a fetcher that stores nothing has none).
        var started = false
    }

    /// 4 MiB: 40 bodies of bench (a)'s 100 KB, or 64 chunks of curl's largest (64 KiB) per connection.
    static let maximumQueuedBytes = 4 << 20

    private let pending = LockedValue(Pending())

    init() {}

    /// Queues `bytes` (copied) to be hashed into `digest`. Blocks while the queue is over its bound.
    func update(_ digest: Digest, _ bytes: UnsafeRawBufferPointer) {
        let copy = [UInt8](bytes)
        let start = pending.update { pending -> Bool in
            pending.jobs.append(.update(digest, copy))
            pending.queuedBytes += copy.count
            defer { pending.started = true }
            return !pending.started
        }
        if start { startThread() }
        if pending.withLock({ $0.queuedBytes > Self.maximumQueuedBytes && !$0.stopped }) {
            pending.wait { $0.queuedBytes <= Self.maximumQueuedBytes || $0.stopped ? () : nil }
        }
    }

    /// Finishes `digest` once every earlier `update` of it is hashed; `completion` gets the lowercase hex, on the
    /// service's thread, unless the service has stopped.
    func finish(_ digest: Digest, completion: @escaping @Sendable (String) -> Void) {
        let start = pending.update { pending -> Bool in
            pending.jobs.append(.finish(digest, completion))
            defer { pending.started = true }
            return !pending.started
        }
        if start { startThread() }
    }

    /// Ends the thread; queued work is dropped.
    func stop() {
        pending.update { $0.stopped = true }
    }

    private func startThread() {
        let pending = pending
        startDedicatedThread { Self.run(pending) }
    }

    private static func run(_ pending: LockedValue<Pending>) {
        while true {
            let jobs = pending.wait { pending -> [Job]?? in
                if pending.stopped { return .some(nil) }
                guard !pending.jobs.isEmpty else { return nil }
                defer { pending.jobs = [] }
                return pending.jobs
            }
            guard let jobs else { return }
            var hashed = 0
            for job in jobs {
                switch job {
                case .update(let digest, let bytes):
                    bytes.withUnsafeBytes { digest.sha256.update($0) }
                    hashed += bytes.count
                case .finish(let digest, let completion):
                    completion(digest.sha256.finalize())
                }
            }
            pending.update { $0.queuedBytes -= hashed }
        }
    }
}
