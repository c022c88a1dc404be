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
    /// The verdict on its structure, when it was read as an image that has one (`ImageStructure`), else nil.
    var structure: ImageStructure.Verdict? = nil
    /// The canvas and frames its structure declares (`ImageStructure.declared`), else nil.
    var declared: ImageHeader? = nil

    /// The read size: 64 KiB. (The digest thread's buffer is resident for the process's life: 256 KiB put one
    /// 45 MB video's `stream` at 24.2 MiB peak RSS, over bench (c)'s 24 MiB goal; reads of 64 KiB hash as fast.)
    static let chunkBytes = 64 * 1024

    /// Reads the file at `path` (never through a link) to its end through `buffer`, walking the structure of an
    /// image of `type` on the way.
    /// - Returns: its digest, or a `StoreError` naming the path and the system's reason.
    static func of(_ path: String, buffer: inout [UInt8], checking type: MediaType? = nil) -> Result<
        FileDigest, StoreError
    > {
        let hash = SHA256()
        var structure = type.flatMap(ImageStructure.init)
        var head: [UInt8] = []
        var total = 0
        let failed = FileSystem.readChunks(path, buffer: &buffer) { chunk in
            hash.update(chunk)
            structure?.feed(chunk)
            if head.count < 16 { head += chunk.prefix(16 - head.count) }
            total += chunk.count
            return true
        }
        if let failed { return .failure(StoreError("read \(path) to hash it", failed)) }
        return .success(
            FileDigest(
                bytes: total, sha256: hash.finalize(), head: head, structure: structure?.verdict,
                declared: structure?.declared))
    }

    /// The digest of `bytes` held in memory (a body not yet written: `HeldBody`), its structure walked as for a
    /// file's.
    static func of(_ bytes: [UInt8], checking type: MediaType? = nil) -> FileDigest {
        let hash = SHA256()
        var structure = type.flatMap(ImageStructure.init)
        bytes.withUnsafeBytes { buffer in
            hash.update(buffer)
            structure?.feed(buffer)
        }
        return FileDigest(
            bytes: bytes.count, sha256: hash.finalize(), head: Array(bytes.prefix(16)), structure: structure?.verdict,
            declared: structure?.declared)
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
