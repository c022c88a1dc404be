import Foundation
import Testing

@testable import RichPush
@testable import RichPushMedia

/// The digest step: each stored file's SHA-256, read back off the fetch loop's thread once the file is complete.
@Suite("Digest step: SHA-256 of stored files, off the loop")
struct DigestServiceTests {
    let directory: String

    init() throws {
        directory = try temporaryDirectory()
    }

    func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let path = directory + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("the digest of a file: its size, SHA-256 and first bytes, across several reads of the buffer")
    func digestOfFile() async throws {
        let service = DigestService()
        defer { service.stop() }
        let hello = try write("hello", Array("hello world".utf8))
        let digest = try await service.digest(hello, bytes: 11).get()
        // SHA-256 of "hello world".
        #expect(digest.sha256 == "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9")
        #expect(digest.bytes == 11)
        #expect(digest.head == Array("hello world".utf8))
        // Larger than the read buffer, and not a multiple of it: every byte counts, in order.
        let large = (0..<(FileDigest.chunkBytes * 3 + 17)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        let path = try write("large", large)
        let read = try await service.digest(path, bytes: large.count).get()
        #expect(read.bytes == large.count)
        #expect(read.sha256 == (try await sha256sum(path)))
        #expect(read.head == Array(large.prefix(16)))
        // The same file on the service's thread (the size it is given decides where it is hashed).
        let threaded = try await service.digest(path, bytes: DigestService.inlineBytes + 1).get()
        #expect(threaded == read)
    }

    @Test(
        """
        a body held in memory: hashed by the caller up to the inline size, on the service's thread past it (refused \
        once the thread has stopped), the same digest as its file's
        """
    )
    func heldBytes() async throws {
        let service = DigestService()
        let large = (0..<(DigestService.inlineBytes + 1)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 11) }
        let path = try write("held", large)
        let read = try await service.digest(path, bytes: large.count).get()
        #expect(try await service.digest(held: large).get() == read)
        service.stop()
        let small = Array(large.prefix(DigestService.inlineBytes))
        #expect(try await service.digest(held: small).get().sha256 == FileDigest.of(small).sha256)
        guard case .failure(let stopped) = await service.digest(held: large) else {
            Issue.record("a body past the inline size was hashed by the caller")
            return
        }
        #expect(stopped.detail == "the fetcher shut down before the file was hashed")
    }

    @Test("many files at once: each gets its own digest, in any order of completion")
    func manyAtOnce() async throws {
        let service = DigestService()
        defer { service.stop() }
        let paths = try (0..<40).map { index in
            try write("f\(index)", Array(repeating: UInt8(index), count: 1000 + index))
        }
        let digests = await withTaskGroup(of: (String, Result<FileDigest, StoreError>).self) { group in
            for path in paths {
                group.addTask { (path, await service.digest(path, bytes: DigestService.inlineBytes + 1)) }
            }
            return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        for (index, path) in paths.enumerated() {
            let digest = try #require(try digests[path]?.get())
            #expect(digest.bytes == 1000 + index)
            #expect(digest.sha256 == (try await sha256sum(path)))
        }
    }

    @Test("a missing file, or a symbolic link, is a StoreError naming the path; it is never followed")
    func refusals() async throws {
        let service = DigestService()
        defer { service.stop() }
        let missing = directory + "/missing"
        guard case .failure(let error) = await service.digest(missing, bytes: DigestService.inlineBytes + 1) else {
            Issue.record("a missing file was digested")
            return
        }
        #expect(error.detail.contains(missing))
        #expect(error.code == ENOENT)
        let target = try write("target", [1, 2, 3])
        let link = directory + "/link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        guard case .failure(let refused) = await service.digest(link, bytes: 3) else {
            Issue.record("a symbolic link was followed")
            return
        }
        #expect(refused.code == ELOOP)
    }

    @Test("after stop, a file is refused at once rather than left waiting")
    func stopped() async throws {
        let service = DigestService()
        service.stop()
        let path = try write("late", [1])
        guard case .failure(let error) = await service.digest(path, bytes: DigestService.inlineBytes + 1) else {
            Issue.record("a stopped service digested a file")
            return
        }
        #expect(error.detail.contains("shut down"))
    }

    @Test("a fetched file's sha256 is the file's, taken by the fetcher after the transfer, small or large")
    func fetchedFileHashed() async throws {
        let bed = try TestBed()
        try await withFetcher(bed.configuration) { fetcher in
            // A small file (hashed by the fetching task) and one over `inlineBytes` (by the service's thread).
            for path in ["/media/photo.jpg", "/generated?prefix=photo.jpg&bytes=2000000"] {
                let media = try await fetcher.fetch(bed.url(path), timeout: .seconds(10)).get()
                #expect(media.sha256 == (try await sha256sum(media.path)), "\(path)")
                #expect(media.sha256.count == 64)
            }
        }
    }
}
