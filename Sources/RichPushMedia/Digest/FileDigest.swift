import RichPushCore
import RichPushStore

/// A stored file's size, SHA-256 and first bytes, read back from the file.
struct FileDigest: Sendable, Equatable {
    /// The byte count.
    var bytes: Int
    /// The SHA-256, lowercase hex.
    var sha256: String
    /// The first 16 bytes (fewer when the file is shorter).
    var head: [UInt8]
    /// The verdict on its structure, when it was read as a type that has a walk (`MediaStructure`), else nil.
    var structure: MediaStructure.Verdict? = nil
    /// The canvas and frames its structure declares (`MediaStructure.declared`), else nil.
    var declared: ImageHeader? = nil

    /// The read size: 64 KiB. (The digest thread's buffer is resident for the process's life: 256 KiB put one
    /// 45 MB video's `stream` at 24.2 MiB peak RSS, over bench (c)'s 24 MiB goal; reads of 64 KiB hash as fast.)
    static let chunkBytes = 64 * 1024

    /// Reads the file at `path` (never through a link) to its end through `buffer`, walking the structure of a
    /// file of `type` on the way.
    /// - Returns: its digest, or a `StoreError` naming the path and the system's reason.
    static func of(_ path: String, buffer: inout [UInt8], checking type: MediaType? = nil) -> Result<
        FileDigest, StoreError
    > {
        var walk = Walk(checking: type)
        let failed = FileSystem.readChunks(path, buffer: &buffer) { chunk in
            walk.feed(chunk)
            return true
        }
        if let failed { return .failure(StoreError("read \(path) to hash it", failed)) }
        return .success(walk.digest)
    }

    /// The digest of the file open at `descriptor`, read from where it stands through `buffer`; nil when a read
    /// failed.
    static func of(_ descriptor: Int32, buffer: inout [UInt8]) -> FileDigest? {
        var walk = Walk(checking: nil)
        let failed = FileSystem.readChunks(descriptor, buffer: &buffer) { chunk in
            walk.feed(chunk)
            return true
        }
        return failed == nil ? walk.digest : nil
    }

    /// The digest of `bytes` held in memory (a body not yet written: `HeldBody`), its structure walked as for a
    /// file's.
    static func of(_ bytes: [UInt8], checking type: MediaType? = nil) -> FileDigest {
        var walk = Walk(checking: type)
        bytes.withUnsafeBytes { walk.feed($0) }
        return walk.digest
    }

    /// The hash, structure, first bytes and count of bytes fed in order: a file's chunks, or a held body at once.
    private struct Walk {
        let hash = SHA256()
        var structure: MediaStructure?
        var head: [UInt8] = []
        var total = 0

        init(checking type: MediaType?) {
            structure = type.flatMap(MediaStructure.init)
        }

        mutating func feed(_ chunk: UnsafeRawBufferPointer) {
            hash.update(chunk)
            structure?.feed(chunk)
            if head.count < 16 { head += chunk.prefix(16 - head.count) }
            total += chunk.count
        }

        var digest: FileDigest {
            FileDigest(
                bytes: total, sha256: hash.finalize(), head: head, structure: structure?.verdict,
                declared: structure?.declared)
        }
    }

    /// The damage its structure showed when a phone still shows part of it, else nil.
    var damage: String? {
        if case .showsPart(let detail)? = structure { return detail }
        return nil
    }

    /// `of(_:buffer:checking:)` with a buffer of its own.
    static func of(_ path: String, checking type: MediaType? = nil) -> Result<FileDigest, StoreError> {
        var buffer = FileSystem.readBuffer(count: chunkBytes)
        return of(path, buffer: &buffer, checking: type)
    }
}
