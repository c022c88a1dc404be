import RichPushCore
import RichPushStore

/// What happens to a body's bytes as they arrive, apart from the transfer that receives them: held to its cap
/// (the largest before the type is known, the type's after), written to a partial attachment, and its first
/// bytes collected for the sniffer. Without storage (a probe) only the cap and the first bytes apply. The file's
/// SHA-256 is not taken here but once it is complete, off the loop's thread (`DigestService`).
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
    private let storage: (() throws(StoreError) -> PartialAttachment)?
    private var partial: PartialAttachment?
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

    /// A body held to `caps`, whose first `sniffBytes` go to the sniffer, written to the attachment `storage`
    /// makes at the first byte (nil: nothing is stored).
    init(caps: BodyCaps, sniffBytes: Int, storage: (() throws(StoreError) -> PartialAttachment)?) {
        self.caps = caps
        self.sniffBytes = sniffBytes
        self.storage = storage
        cap = caps.beforeType
    }

    /// The body starts, with the length its response declares (-1 when none): refused when that exceeds the cap,
    /// else its file is made.
    func begin(declaredLength: Int64) -> FetchFailure? {
        self.declaredLength = declaredLength
        if declaredLength > Int64(cap) {
            return FetchFailure(.tooLarge, "declares \(declaredLength) bytes; no type may exceed \(cap)")
        }
        if let storage {
            do {
                partial = try storage()
            } catch {
                return FetchFailure(.storeFailed, error.detail)
            }
        }
        begun = true
        return nil
    }

    /// Takes one chunk: capped, written, its first bytes kept. Returns why the transfer must stop, or nil.
    func append(_ chunk: UnsafeRawBufferPointer) -> FetchFailure? {
        guard bytes + chunk.count <= cap else {
            return FetchFailure(.tooLarge, "more than \(cap) bytes\(type == nil ? "" : " (the \(capName))")")
        }
        if let partial {
            do {
                try partial.write(chunk)
            } catch {
                return FetchFailure(.storeFailed, error.detail)
            }
        }
        bytes += chunk.count
        if !headTaken, head.count < sniffBytes { head.append(contentsOf: chunk.prefix(sniffBytes - head.count)) }
        return nil
    }

    /// The first bytes for the sniffer, once: when `sniffBytes` have arrived, or (`ended`) when the body ended
    /// shorter.
    func takeHead(ended: Bool = false) -> [UInt8]? {
        guard !headTaken, ended || head.count >= sniffBytes else { return nil }
        headTaken = true
        return head
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

    /// Closes and renames the file to its type's extension: the stored body, for the digest step to hash, with the
    /// response's `validators` and the transfer's `provenance`.
    func commit(validators: Validators, provenance: FetchedMedia.Provenance) -> Result<StoredBody, FetchFailure> {
        guard let partial, let type else { return .failure(FetchFailure(.network, "no body")) }
        self.partial = nil
        do {
            let path = try partial.commit(fileExtension: type.fileExtension)
            return .success(
                StoredBody(
                    path: path, directory: partial.directory, type: type, bytes: bytes, validators: validators,
                    dimensions: dimensions, provenance: provenance, identity: partial.identity))
        } catch {
            return .failure(FetchFailure(.storeFailed, error.detail))
        }
    }

    /// Removes the partial file and its directory, if any. Idempotent.
    func discard() {
        partial?.discard()
        partial = nil
    }
}

@available(*, unavailable)
extension MediaBody: Sendable {}
