import RichPushCore
import RichPushStore

/// What happens to a body's bytes as they arrive, apart from the transfer that receives them: held to its cap
/// (the largest before the type is known, the type's after), kept in memory while it is small (`BodyMemory`: the
/// task that fetched it writes it whole) or else written to a partial attachment, and its first bytes collected
/// for the sniffer. Without storage (a probe) only the cap and the first bytes apply. The SHA-256 is not taken
/// here but once the body is complete, off the loop's thread (`DigestService`, or from a held body's bytes).
///
/// The transfer reports to it (as corelibs-foundation's easy handle reports to its delegate) and keeps the HTTP:
/// statuses, redirects, validators. Lives on the loop's thread.
final class MediaBody {
    /// What the sniffer's verdict did.
    enum Decision: Equatable {
        /// The type is accepted; the body goes on under its cap.
        case accepted
        /// The type is refused, or the body is already over its cap.
        case refused(FetchFailure)
    }

    private let caps: BodyCaps
    private let sniffBytes: Int
    /// The first bytes a probe keeps: the sniffing window, or more when it asked for more (`probeBytes`) and the
    /// loop's memory for held bodies allowed them.
    private let probeBytes: Int
    /// What a probe keeping more than the window reserved of the loop's memory for held bodies, until it is freed.
    private var probeReservation: (memory: BodyMemory, bytes: Int)?
    private let storage: (() throws(StoreError) -> PartialAttachment)?
    private var partial: PartialAttachment?
    /// Where a small body is held until complete (nil: every body goes to its file).
    private let memory: BodyMemory?
    /// The body while it is held in memory (nil once written to its file, or when never held).
    private var held: [UInt8]?
    /// The bytes of `memory` reserved for `held`: its capacity.
    private var reserved = 0
    /// The first bytes; once handed to the sniffer, kept until its verdict to read an image's dimensions from (a
    /// probe's for good: `probedHead`).
    private var head: [UInt8] = []
    private var headTaken = false
    /// An image's width and height, when its first bytes say (`ImageDimensions`); set with the verdict.
    private(set) var dimensions: ImageSize?
    private var cap: Int
    private var capName = "largest cap"
    private var declaredLength: Int64 = -1
    /// The type the sniffer decided, once it has.
    private(set) var type: MediaType?
    /// Body bytes taken so far.
    private(set) var bytes = 0
    /// Whether the body has begun (`begin` succeeded).
    private(set) var begun = false

    /// A body held to `caps`, whose first `sniffBytes` go to the sniffer, stored (nil: nothing is) in memory while
    /// `memory` allows, else in the attachment `storage` makes at the first byte or once the body outgrows memory.
    /// Without storage (a probe) its first `probeBytes` are kept where `memory` has room for those past
    /// `sniffBytes` (reserved there while it lives: many probes asking for 1 MiB each, `explain` requests to `serve`,
    /// hold no more than held bodies may), else `sniffBytes`.
    init(
        caps: BodyCaps, sniffBytes: Int, storage: (() throws(StoreError) -> PartialAttachment)?,
        memory: BodyMemory? = nil, probeBytes: Int = 0
    ) {
        self.caps = caps
        self.sniffBytes = sniffBytes
        if storage == nil, probeBytes > sniffBytes, let memory, memory.reserve(probeBytes - sniffBytes) {
            self.probeBytes = probeBytes
            probeReservation = (memory, probeBytes - sniffBytes)
        } else {
            self.probeBytes = sniffBytes
        }
        self.storage = storage
        // None held by a probe (it stores nothing) or when memory allows none.
        self.memory = storage != nil && memory?.holdsAny == true ? memory : nil
        cap = caps.beforeType
    }

    deinit {
        memory?.release(reserved)
        if let probeReservation { probeReservation.memory.release(probeReservation.bytes) }
    }

    /// The body starts, with the length its response declares (-1 when none): refused when that exceeds the cap,
    /// else held in memory when it may be (its declared length, else a first 64 KiB, reserved), else its file is
    /// made.
    func begin(declaredLength: Int64) -> FetchFailure? {
        self.declaredLength = declaredLength
        if declaredLength > Int64(cap) {
            return FetchFailure(.tooLarge, "declares \(declaredLength) bytes; no type may exceed \(cap)")
        }
        if let memory, declaredLength <= Int64(memory.bodyBytes) {
            let first = declaredLength >= 0 ? Int(declaredLength) : min(Self.firstUnknown, memory.bodyBytes)
            if let (buffer, reserving) = memory.buffer(for: first) {
                reserved = reserving
                held = buffer
                begun = true
                return nil
            }
        }
        if let failure = makeFile() { return failure }
        begun = true
        return nil
    }

    /// What a body of unknown length is first given in memory: 64 KiB, then twice as much each time it fills.
    private static let firstUnknown = 64 * 1024

    /// Makes the attachment's file (when storing), and writes into it what was held: a body that outgrew memory.
    private func makeFile() -> FetchFailure? {
        guard let storage else { return nil }
        do {
            let partial = try storage()
            self.partial = partial
            if held != nil {
                // No binding of the bytes outlives the write: the buffer goes back to the spares unshared.
                try partial.write(held!)
                letGoOfHeld()
            }
        } catch {
            return FetchFailure(.storeFailed, error.detail)
        }
        return nil
    }

    /// Keeps `chunk` in memory when the held body has room for it or may grow (twice its reservation, up to the
    /// largest held); false when it may not (the body then goes to its file).
    private func hold(_ chunk: UnsafeRawBufferPointer) -> Bool {
        guard let memory, held != nil else { return false }
        let needed = bytes + chunk.count
        if needed > reserved {
            let grown = min(max(reserved * 2, needed), memory.bodyBytes)
            guard needed <= grown, memory.reserve(grown - reserved) else { return false }
            held?.reserveCapacity(grown)
            reserved = grown
        }
        held?.append(contentsOf: chunk.assumingMemoryBound(to: UInt8.self))
        return true
    }

    /// Takes one chunk: capped, held or written, its first bytes kept. Returns why the transfer must stop, or nil.
    func append(_ chunk: UnsafeRawBufferPointer) -> FetchFailure? {
        guard bytes + chunk.count <= cap else {
            return FetchFailure(.tooLarge, "more than \(cap) bytes\(type == nil ? "" : " (the \(capName))")")
        }
        if held != nil, !hold(chunk), let failure = makeFile() { return failure }
        if let partial {
            do {
                try partial.write(chunk)
            } catch {
                return FetchFailure(.storeFailed, error.detail)
            }
        }
        bytes += chunk.count
        // The first bytes, whole from the first byte on: the sniffing window, a probe's as far as it asked.
        let kept = storage == nil ? probeBytes : headTaken ? 0 : sniffBytes
        if head.count < kept { head.append(contentsOf: chunk.prefix(kept - head.count)) }
        return nil
    }

    /// Whether a probe has all the first bytes it keeps (its sniffing window, or the more it asked for).
    var probeHasAll: Bool { head.count >= probeBytes }

    /// The first bytes for the sniffer, once: when `sniffBytes` have arrived, or (`ended`) when the body ended
    /// shorter.
    func takeHead(ended: Bool = false) -> [UInt8]? {
        guard !headTaken, ended || head.count >= sniffBytes else { return nil }
        headTaken = true
        return head.count > sniffBytes ? Array(head.prefix(sniffBytes)) : head
    }

    /// Applies the sniffer's verdict: the type's cap from now on.
    func decide(_ verdict: SniffVerdict) -> Decision {
        guard let (type, cap, name) = caps.cap(for: verdict) else {
            switch verdict {
            case .unsupported(let what), .convertible(_, let what):
                return .refused(FetchFailure(.unsupportedType, what))
            case .supported: preconditionFailure("a supported type always has a cap")
            }
        }
        self.type = type
        self.cap = cap
        capName = name
        if type.kind == .image { dimensions = ImageDimensions.parse(head, type: type) }
        // A probe stores nothing and reports its first bytes; a stored body is done with them.
        if storage != nil { head = [] }
        if declaredLength > Int64(cap) {
            return .refused(FetchFailure(.tooLarge, "declares \(declaredLength) bytes; the \(name) is \(cap)"))
        }
        if bytes > cap { return .refused(FetchFailure(.tooLarge, "more than \(cap) bytes (the \(name))")) }
        return .accepted
    }

    /// The size a probe reports: the declared length when there was one, else the bytes seen.
    var probedSize: Int { declaredLength >= 0 ? Int(declaredLength) : bytes }

    /// The first bytes a probe reports: those handed to the sniffer.
    var probedHead: [UInt8] { head }

    /// The complete body, with the response's `validators` and the transfer's `provenance`: held in memory, for the
    /// task that fetched it to hash and store (`HeldBody`), or its file closed and renamed to its type's extension,
    /// for the digest step to hash.
    func commit(validators: Validators, provenance: FetchedMedia.Provenance) -> TransferOutcome {
        guard let type else { return .failed(FetchFailure(.network, "no body")) }
        if let held, let memory {
            self.held = nil
            let body = HeldBody(
                bytes: held, type: type, validators: validators, dimensions: dimensions, provenance: provenance,
                memory: memory, reserved: reserved)
            reserved = 0
            return .held(body)
        }
        guard let partial else { return .failed(FetchFailure(.network, "no body")) }
        self.partial = nil
        switch StoredBody.committing(
            partial, type: type, bytes: bytes, validators: validators, dimensions: dimensions, provenance: provenance)
        {
        case .success(let stored): return .stored(stored)
        case .failure(let failure): return .failed(failure)
        }
    }

    /// Removes the partial file and its directory, if any, and lets go of a held body. Idempotent.
    func discard() {
        partial?.discard()
        partial = nil
        letGoOfHeld()
    }

    /// Drops the body held in memory, if any, and gives its reservation back.
    private func letGoOfHeld() {
        // With no buffer, an empty one: nothing is kept, the reservation is given back.
        memory?.giveBack(held.take() ?? [], reserved: reserved)
        reserved = 0
    }
}

@available(*, unavailable)
extension MediaBody: Sendable {}
