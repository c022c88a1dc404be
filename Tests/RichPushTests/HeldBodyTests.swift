import FixtureOrigin
import Foundation
import Testing

@testable import RichPush
@testable import RichPushMedia
@testable import RichPushStore

/// Bodies held in memory until complete (`BodyMemory`, `HeldBody`) against a loopback origin: what is stored, and
/// that every way a transfer ends gives the memory back.
@Suite("Bodies held in memory, against a loopback origin")
struct HeldBodyTests {
    /// The bytes `/generated?prefix=NAME&bytes=TOTAL` sends: NAME's first 4 KB, then zeros.
    static func generated(_ name: String, total: Int) -> [UInt8] {
        let prefix = Array(fixture(name).prefix(4096).prefix(total))
        return prefix + [UInt8](repeating: 0, count: total - prefix.count)
    }

    static func sha256(_ bytes: [UInt8]) -> String {
        let hash = SHA256()
        bytes.withUnsafeBytes { hash.update($0) }
        return hash.finalize()
    }

    /// The attachments' files, the spares made ahead left out.
    static func stored(_ bed: TestBed) -> [String] {
        bed.filesOnDisk().filter { !$0.contains(AttachmentRoot.sparePrefix) }
    }

    @Test(
        """
        a body is stored whole, its SHA-256 that of exactly its bytes, however it was kept: held (declared or not), \
        outgrowing memory into its file, declared larger than memory allows
        """,
        arguments: [
            (300_000, ""), (300_000, "&nolength=1"), (1_500_000, "&nolength=1"), (1_500_000, ""),
        ])
    func storedWhole(total: Int, length: String) async throws {
        let bed = try TestBed()
        try await withFetcher(bed.configuration) { fetcher in
            let media = try await fetcher.fetch(
                bed.url("/generated?prefix=photo.jpg&bytes=\(total)\(length)"), timeout: .seconds(10)
            ).get()
            let expected = Self.sha256(Self.generated("photo.jpg", total: total))
            #expect(media.bytes == total)
            #expect(media.sha256 == expected)
            #expect(try await sha256sum(media.path) == expected)
            #expect(Self.stored(bed) == [String(media.path.dropFirst(bed.attachments.count + 1))])
            #expect(fetcher.heldBodyBytes == 0)
        }
    }

    @Test("bodies fetched one after another are held in one buffer, given back after each and taken by the next")
    func oneBufferReused() async throws {
        let bed = try TestBed()
        try await withFetcher(bed.configuration) { fetcher in
            var kept: [Int] = []
            for index in 0..<20 {
                let url = bed.url("/generated?prefix=photo.jpg&bytes=100000&n=\(index)")
                let media = try await fetcher.fetch(url, timeout: .seconds(10)).get()
                #expect(media.bytes == 100_000)
                kept.append(fetcher.spareBufferBytes)
            }
            // One buffer of at least 100,000 bytes, the same one each time: a new one each time would keep 20.
            #expect(kept.allSatisfy { $0 >= 100_000 && $0 < 200_000 }, "spare bytes after each: \(kept)")
            #expect(fetcher.spareBuffersReallocated == 0, "a buffer given back while its bytes were still referenced")
            #expect(fetcher.heldBodyBytes == 0)
        }
    }

    /// The digest thread's job ends its turn after it resumes the fetching task: a job that captured the bytes held
    /// them into the store (red in one run in four without `DigestService`'s box).
    @Test("a held body larger than the digest's inline bound, hashed on its thread, gives its buffer back unshared")
    func largeBufferReused() async throws {
        let bed = try TestBed { $0.limits.heldBodyBytes = 2 << 20 }
        try await withFetcher(bed.configuration) { fetcher in
            for index in 0..<4 {
                let url = bed.url("/generated?prefix=photo.jpg&bytes=1500000&n=\(index)")
                let media = try await fetcher.fetch(url, timeout: .seconds(10)).get()
                #expect(media.sha256 == Self.sha256(Self.generated("photo.jpg", total: 1_500_000)))
            }
            #expect(fetcher.spareBufferBytes >= 1_500_000, "held, not written as it came")
            #expect(fetcher.spareBuffersReallocated == 0, "a buffer given back while the digest's job held its bytes")
        }
    }

    @Test(
        """
        every way a transfer ends gives its held memory back, once: refused for its type, its cap, its structure; \
        cut short; expired; redirected; retried on a new connection; not modified; probed; many at once past the \
        total; shut down
        """
    )
    func everyEnding() async throws {
        let bed = try TestBed {
            $0.limits.imageBytes = 1_000_000
            // Three photo.jpg at once, not four: the rest of a burst go to their files.
            $0.limits.heldBytes = 20_000
        }
        try await withFetcher(bed.configuration) { fetcher in
            /// Fetches `path`; expects it to end with `code` (nil: stored) and the memory to be all given back.
            func fetch(_ path: String, _ code: EnrichmentProblem.Code?, within timeout: Duration = .seconds(10)) async {
                let result = await fetcher.fetch(bed.url(path), timeout: timeout)
                switch result {
                case .success: #expect(code == nil, "\(path): \(result)")
                case .failure(let failure): #expect(failure.code == code, "\(path): \(failure)")
                }
                #expect(fetcher.heldBodyBytes == 0, "after \(path)")
            }
            // Refused once its body had begun in memory.
            await fetch("/media/error-page.html?type=image/jpeg", .unsupportedType)
            await fetch("/generated?prefix=photo.jpg&bytes=1040000&nolength=1", .tooLarge)
            await fetch("/generated?prefix=logo.png&bytes=800", .damagedImage)
            await fetch("/generated?prefix=photo.jpg&bytes=20000&declare=40000", .badResponse)
            await fetch("/drip/photo.jpg?bytes=1000&ms=200", .expired, within: .milliseconds(500))
            #expect(Self.stored(bed).isEmpty, "\(Self.stored(bed))")
            // Delivered.
            await fetch("/redirect/2?to=/media/photo.jpg", nil)
            await fetch("/generated?prefix=photo.jpg&bytes=40000&excess=100000", nil)
            await fetch("/media/photo.jpg?after-excess", nil)
            let first = try await fetcher.fetch(bed.url("/media/logo.png"), timeout: .seconds(10)).get()
            guard
                case .notModified = await fetcher.fetch(
                    bed.url("/media/logo.png"), deadline: .now + .seconds(10), validators: first.validators)
            else {
                Issue.record("a conditional fetch of an unchanged file not answered 304")
                return
            }
            #expect(fetcher.heldBodyBytes == 0)
            let probed = try await fetcher.probe(bed.url("/media/photo.jpg?probe"), deadline: .now + .seconds(10)).get()
            #expect(probed.type == .jpeg && fetcher.heldBodyBytes == 0)
            let many = await withTaskGroup(of: Result<FetchedMedia, FetchFailure>.self) { group in
                for index in 0..<12 {
                    group.addTask { await fetcher.fetch(bed.url("/media/photo.jpg?n=\(index)"), timeout: .seconds(10)) }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let expected = Self.sha256(fixture("photo.jpg"))
            #expect(many.allSatisfy { (try? $0.get().sha256) == expected }, "\(many)")
            #expect(fetcher.heldBodyBytes == 0)
            // Shut down while a body is held.
            let dripping = Task {
                await fetcher.fetch(bed.url("/drip/photo.jpg?bytes=1000&ms=100"), timeout: .seconds(10))
            }
            try await waitUntil("the body to be held in memory") { fetcher.heldBodyBytes > 0 }
            await fetcher.shutdown()
            let shutDown = await dripping.value
            #expect((try? shutDown.get()) == nil, "\(shutDown)")
            #expect(fetcher.heldBodyBytes == 0)
        }
    }
}
