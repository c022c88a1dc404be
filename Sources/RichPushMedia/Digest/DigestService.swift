import RichPushCore
import RichPushStore

/// The SHA-256 of stored files, taken off the fetch loop's thread once each file is complete.
///
/// Measured (`perf record` of `stream`, bench (a), 2,000 bodies of 100 KB on a tmpfs): hashing each chunk as it
/// arrived was 32% of the fetch loop's thread, the thread every transfer waits on; receiving and writing were
/// 34%. Taken here, after the file is renamed into place, the hash runs on the second core while the loop
/// receives the next bodies. Reading the file back from the page cache and handing every file over cost about
/// 10% more CPU in that run (0.54 against 0.49 s), for 5% less wall time; the inline rule below takes most of the
/// CPU back.
///
/// One thread (`WorkerThreads`): a file's hash takes about 0.5 ms per MB (OpenSSL with SHA-NI here), so one thread
/// keeps up with the fetch loop's disk writes. Files are hashed first come, first served. A file of at most
/// `inlineBytes` is hashed by the caller instead, on its own thread: the handoff to this thread and back (two
/// wake-ups) cost more than hashing 100 KB (bench (a), 16 alternated runs: 0.37 s wall and 0.52 s CPU against
/// 0.39 s and 0.56 s).
///
/// The same read walks the file's structure (`MediaStructure`: JPEG, PNG, GIF, MP3, WAV, AIFF, M4A, MP4, AVI, MPEG),
/// so that a file cut short is known without a second read, and off the fetch loop's thread like the hash.
final class DigestService: Sendable {
    /// The largest file hashed by the caller (1 MiB: about 0.5 ms of a thread); larger ones go to this thread.
    static let inlineBytes = 1 << 20

    private let thread = WorkerThreads(name: "rp-digest")
    /// The thread's read buffer, made at its first file (most processes hash only files under `inlineBytes` and
    /// never need it). Touched only on `thread`'s one thread.
    private nonisolated(unsafe) var buffer: [UInt8] = []

    /// The digest of the file at `path` (never through a link), of `bytes` bytes as stored, with the structure of
    /// a file of `type` walked in the same read: hashed here when it is at most `inlineBytes`, else on the
    /// service's thread.
    /// - Returns: its size, SHA-256, first bytes and structure's verdict, or a `StoreError` when it cannot be read
    ///   or the service has stopped.
    func digest(_ path: String, bytes: Int, checking type: MediaType? = nil) async -> Result<FileDigest, StoreError> {
        if bytes <= Self.inlineBytes { return FileDigest.of(path, checking: type) }
        return await onThread { [self] in
            if buffer.isEmpty { buffer = FileSystem.readBuffer(count: FileDigest.chunkBytes) }
            return FileDigest.of(path, buffer: &buffer, checking: type)
        }
    }

    /// The digest of `bytes` held in memory (a body not yet written: `HeldBody`), its structure walked as a file's
    /// is: by the caller when at most `inlineBytes`, else on the service's thread, so that no pool thread hashes a
    /// body larger than that (one is held only when `limits.heldBodyBytes` is raised past 1 MiB).
    /// - Returns: its digest, or a `StoreError` when the service has stopped.
    func digest(held bytes: [UInt8], checking type: MediaType? = nil) async -> Result<FileDigest, StoreError> {
        if bytes.count <= Self.inlineBytes { return .success(FileDigest.of(bytes, checking: type)) }
        // Handed over in a box the job empties: the thread keeps its last job a while after resuming the caller, and
        // a job holding the bytes would make the body's buffer go back to the spares still shared once stored.
        let box = LockedValue<[UInt8]?>(bytes)
        return await onThread {
            .success(FileDigest.of(box.withLock { $0.take() } ?? [], checking: type))
        }
    }

    /// What `work` returns, run on the service's thread in its turn; a `StoreError` at once when the service has
    /// stopped.
    private func onThread(
        _ work: @escaping @Sendable () -> Result<FileDigest, StoreError>
    ) async -> Result<FileDigest, StoreError> {
        await withCheckedContinuation { continuation in
            thread.submit { turn in
                guard case .run = turn else { return continuation.resume(returning: .failure(Self.stopped)) }
                continuation.resume(returning: work())
            }
        }
    }

    /// Ends the thread; files still queued get a `StoreError`.
    func stop() {
        thread.shutdown(.refuse)
    }

    private static let stopped = StoreError(detail: "the fetcher shut down before the file was hashed")
}
