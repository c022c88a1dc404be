import RichPushCore
import RichPushStore
import Synchronization

/// How much of the bodies being received a fetch loop keeps in memory rather than in their files: a body of at most
/// `bodyBytes` (declared, or unknown and not yet past it) is held until it is complete, then written whole by the
/// task that fetched it (`HeldBody.store(in:)`), while the loop's thread goes on receiving; one larger, or one that
/// would take the loop's held bytes past `totalBytes`, is written to its file as it arrives, as every body was.
///
/// Why: a body written as it arrives costs the loop's thread, the thread every transfer waits on, the attachment's
/// directory and file (made, or a spare renamed and opened), a `write` of every chunk curl hands over (at most
/// 16 KiB: 7 for a 100 KB image), the `fstat`, close and rename; then the task that fetched it opened the file
/// again and read it back to hash it. A held body is hashed from memory and written with one `write`, off the
/// loop's thread, and one refused for its structure or pixels is never written at all.
///
/// Shared by the loop's thread, which reserves bytes as bodies grow, and the tasks that store them, which give
/// them back (a held body gives its bytes back once stored or refused, `HeldBody.store(in:)` and `discard()`, or
/// else when it is freed).
///
/// Its bounds are `LimitSettings.heldBodyBytes` and `heldBytes` (defaults 1 MiB, the largest file the fetching task
/// hashes itself, `DigestService.inlineBytes`; and 16 MiB, 64 transfers of 256 KB).
package final class BodyMemory: Sendable {
    /// The largest body held.
    package let bodyBytes: Int
    /// The most bytes held at once.
    package let totalBytes: Int
    private let reserved = Atomic<Int>(0)

    /// Bodies of at most `bodyBytes` held, `totalBytes` at most together; 0 for either holds none.
    package init(bodyBytes: Int, totalBytes: Int) {
        self.bodyBytes = bodyBytes
        self.totalBytes = totalBytes
    }

    /// Whether any body may be held (neither bound is 0).
    var holdsAny: Bool { bodyBytes > 0 && totalBytes > 0 }

    /// The bytes reserved now by bodies being received or held.
    package var inUse: Int { reserved.load(ordering: .relaxed) }

    /// Reserves `count` more bytes; false (nothing reserved) when they would take the total past `totalBytes`.
    func reserve(_ count: Int) -> Bool {
        let total = reserved.add(count, ordering: .relaxed).newValue
        guard total > totalBytes else { return true }
        reserved.subtract(count, ordering: .relaxed)
        return false
    }

    /// Gives back `count` reserved bytes.
    func release(_ count: Int) {
        if count > 0 { reserved.subtract(count, ordering: .relaxed) }
    }

    // MARK: - Spare buffers

    /// Buffers of bodies stored or refused, kept empty for the bodies that come next.
    private struct Spares {
        var buffers: [[UInt8]] = []
        /// Their capacities together.
        var bytes = 0
    }

    private let spares = Mutex(Spares())

    /// The most bytes of spare buffers kept (their capacities together): a quarter of `totalBytes` (4 MiB of the
    /// default 16 MiB: 40 bodies of 100 KB). A buffer given back when they are full takes the place of the oldest, so
    /// that the spares follow the sizes of the bodies that come now.
    ///
    /// Why: a body's buffer is allocated on the loop's thread and freed by the task that stores it; at glibc's
    /// default trim threshold (128 KiB) a free at the top of an arena gave its pages back to the kernel, and the next
    /// body's buffer faulted them in again (docs/performance.md, issue 26 round nine). Keeping a few here reuses their
    /// pages and leaves the process's allocator as its host set it.
    package var spareLimit: Int { totalBytes / 4 }

    /// The most spare buffers kept, whatever their sizes: 64, one for each of the fetch loop's default 64
    /// connections. The best fit is searched among them on the loop's thread as each held body begins; bounded by
    /// bytes alone, bodies of 1 KB would keep 4,096 of them there.
    package static let spareCount = 64

    /// The spare buffers kept now.
    package var spareBuffers: Int { spares.withLock { $0.buffers.count } }

    /// The bytes of spare buffers kept now.
    package var spareBytes: Int { spares.withLock { $0.bytes } }

    /// How many buffers given back had to be emptied into new storage, because another reference to their bytes
    /// was still alive: each is an allocation the spares were meant to save (0 when every path moves its buffer).
    package var reallocated: Int { reallocations.load(ordering: .relaxed) }
    private let reallocations = Atomic<Int>(0)

    /// The smallest spare buffer with room for `capacity` bytes and at most twice as large, taken out; nil when none.
    func spare(fitting capacity: Int) -> [UInt8]? {
        spares.withLock { spares -> [UInt8]? in
            var best: Int?
            for (index, buffer) in spares.buffers.enumerated()
            where buffer.capacity >= capacity && buffer.capacity <= 2 * max(capacity, 1) {
                if best.map({ buffer.capacity < spares.buffers[$0].capacity }) ?? true { best = index }
            }
            guard let best else { return nil }
            spares.bytes -= spares.buffers[best].capacity
            return spares.buffers.remove(at: best)
        }
    }

    /// An empty buffer for a body of `count` bytes, reserved, and the bytes reserved: a spare one that fits, at its
    /// whole capacity (up to twice `count`), else, when that would take the total past its bound or none fits, a new
    /// one of `count`; nil when not even `count` may be reserved (the body then goes to its file).
    func buffer(for count: Int) -> (bytes: [UInt8], reserved: Int)? {
        if let spare = spare(fitting: count) {
            if reserve(spare.capacity) { return (spare, spare.capacity) }
            recycle(consume spare)
        }
        guard reserve(count) else { return nil }
        var fresh: [UInt8] = []
        fresh.reserveCapacity(count)
        return (fresh, count)
    }

    /// Keeps `buffer`, emptied, for a later body, in place of the oldest spares when they are full (`spareLimit`
    /// bytes, or `spareCount` buffers); a buffer larger than `spareLimit` is freed.
    func recycle(_ buffer: consuming [UInt8]) {
        var kept = consume buffer
        let storage = kept.withUnsafeBytes { $0.baseAddress }
        kept.removeAll(keepingCapacity: true)
        if kept.withUnsafeBytes({ $0.baseAddress }) != storage { reallocations.add(1, ordering: .relaxed) }
        let capacity = kept.capacity
        guard capacity > 0, capacity <= spareLimit else { return }
        // The evicted buffers are returned to be freed here, outside the lock.
        _ = spares.withLock { spares -> [[UInt8]] in
            var evicted: [[UInt8]] = []
            while spares.bytes + capacity > spareLimit || spares.buffers.count >= Self.spareCount,
                !spares.buffers.isEmpty
            {
                let oldest = spares.buffers.removeFirst()
                spares.bytes -= oldest.capacity
                evicted.append(oldest)
            }
            spares.bytes += capacity
            spares.buffers.append(kept)
            return evicted
        }
    }

    /// Gives back what a held body had: its `reserved` bytes, and its buffer for a later body.
    func giveBack(_ buffer: consuming [UInt8], reserved: Int) {
        release(reserved)
        recycle(consume buffer)
    }
}

/// A body received whole into memory (`BodyMemory`), its type decided, not yet written: what a transfer delivers
/// for a small body. The task that fetched it hashes the bytes and then stores them (`store(in:)`), which lets go
/// of them and gives their reserved bytes back to the loop's `BodyMemory`; one never stored gives them back when it
/// is freed.
package final class HeldBody: Sendable {
    /// The bytes and the bytes of `memory` reserved for them, until the body is stored (nil from then on).
    ///
    /// Why not a constant: the task that fetched the body keeps this value until its fetch returns, after the
    /// transformation (the switch over the transfer's outcome holds it), which may wait for a converter's thread;
    /// holding the bytes and their reservation until then kept every body waiting to be converted in memory, and
    /// sent the bodies that came meanwhile to their files as the total filled.
    private let content: Mutex<(bytes: [UInt8], reserved: Int)?>
    /// The body's length in bytes (kept when the bytes are let go of).
    package let count: Int
    /// The type the sniffer decided.
    package let type: MediaType
    /// The response's validators.
    package let validators: Validators
    /// An image's width and height when its first bytes said them, else nil.
    package let dimensions: ImageSize?
    /// The redirects the transfer followed and the Content-Type its final response sent.
    package let provenance: FetchedMedia.Provenance
    private let memory: BodyMemory

    /// `bytes`, holding `reserved` bytes of `memory` until stored or freed.
    init(
        bytes: [UInt8], type: MediaType, validators: Validators, dimensions: ImageSize?,
        provenance: FetchedMedia.Provenance, memory: BodyMemory, reserved: Int
    ) {
        content = Mutex((bytes, reserved))
        count = bytes.count
        self.type = type
        self.validators = validators
        self.dimensions = dimensions
        self.provenance = provenance
        self.memory = memory
    }

    deinit { memory.release(content.withLock { $0?.reserved ?? 0 }) }

    /// The body; empty once stored or discarded.
    package var bytes: [UInt8] { content.withLock { $0?.bytes ?? [] } }

    /// Lets go of the bytes and gives their reservation back: a body refused before it is stored. (Freeing it does
    /// too, but the loop's thread, which delivered it, may hold it a moment after the fetching task is done.)
    package func discard() {
        if let (bytes, reserved) = take() { memory.giveBack(consume bytes, reserved: reserved) }
    }

    /// The bytes and their reservation, taken out once (nil after).
    private func take() -> (bytes: [UInt8], reserved: Int)? {
        content.withLock { content in
            defer { content = nil }
            return content
        }
    }

    /// Writes the body into a new attachment from `spares` (its own directory, a partial file renamed to its type's
    /// extension once written whole), as a transfer stores a larger body as it arrives; then lets go of the bytes and
    /// gives their reservation back, stored or not. Once only.
    /// - Returns: the stored body, or `store-failed` with the system's reason (nothing is left behind).
    package func store(in spares: SpareAttachments) -> Result<StoredBody, FetchFailure> {
        guard let (bytes, reserved) = take() else { preconditionFailure("a held body is stored once") }
        let written: Result<PartialAttachment, FetchFailure>
        do {
            let partial = try spares.take()
            try partial.write(bytes)
            written = .success(partial)
        } catch {
            written = .failure(FetchFailure(.storeFailed, error.detail))
        }
        memory.giveBack(consume bytes, reserved: reserved)
        return written.flatMap { partial in
            StoredBody.committing(
                partial, type: type, bytes: count, validators: validators, dimensions: dimensions,
                provenance: provenance)
        }
    }
}
