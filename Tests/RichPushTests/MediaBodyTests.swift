import Foundation
import Testing

@testable import RichPush
@testable import RichPushFetch
@testable import RichPushMedia
@testable import RichPushStore

/// `MediaBody` and `BodyCaps`: what happens to a body's bytes, apart from any transfer (no curl, no origin).
@Suite("Media body: cap, store and sniff, apart from the transfer")
struct MediaBodyTests {
    let root: AttachmentRoot
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "richpush-body-" + UUID().uuidString
        root = try AttachmentRoot(opening: path)
    }

    func body(
        limits: Enricher.Configuration.Limits = Enricher.Configuration.Limits(),
        transform: Enricher.Configuration.Transform = .init(),
        storing: Bool = true, memory: BodyMemory? = nil
    ) -> MediaBody {
        let root = root
        return MediaBody(
            caps: BodyCaps(limits: limits, transform: transform), sniffBytes: 8,
            storage: storing ? { () throws(StoreError) in try root.begin() } : nil, memory: memory)
    }

    /// The body `outcome` stored in its file, or nil (the test records what it was).
    func stored(_ outcome: TransferOutcome, sourceLocation: SourceLocation = #_sourceLocation) -> StoredBody? {
        guard case .stored(let body) = outcome else {
            Issue.record("not stored in its file: \(outcome)", sourceLocation: sourceLocation)
            return nil
        }
        return body
    }

    /// The body `outcome` held in memory, or nil (the test records what it was).
    func held(_ outcome: TransferOutcome, sourceLocation: SourceLocation = #_sourceLocation) -> HeldBody? {
        guard case .held(let body) = outcome else {
            Issue.record("not held in memory: \(outcome)", sourceLocation: sourceLocation)
            return nil
        }
        return body
    }

    /// A body of `count` bytes counting up from 0, appended in chunks of `chunk` bytes, typed JPEG; nil when a
    /// chunk was refused.
    func fill(_ body: MediaBody, count: Int, chunk: Int, declared: Int64 = -1) -> FetchFailure? {
        if let failure = body.begin(declaredLength: declared) { return failure }
        let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0) }
        for start in stride(from: 0, to: count, by: chunk) {
            if let failure = append(body, Array(bytes[start..<min(start + chunk, count)])) { return failure }
        }
        _ = body.takeHead(ended: true)
        if case .refused(let failure) = body.decide(.supported(.jpeg)) { return failure }
        return nil
    }

    func append(_ body: MediaBody, _ bytes: [UInt8]) -> FetchFailure? {
        bytes.withUnsafeBytes { body.append($0) }
    }

    func entries() -> [String] {
        entriesBelow(path)
    }

    static var transforming: Enricher.Configuration.Transform {
        var transform = Enricher.Configuration.Transform()
        transform.converter = NoConverter()
        return transform
    }

    /// A converter the caps only check for presence of; `BodyCaps` never calls it.
    struct NoConverter: ImageConverter {
        func header(of path: String, type: MediaType) throws(TransformFailure) -> ImageHeader {
            throw TransformFailure(.transformFailed, "not called")
        }
        func convert(_ request: ConversionRequest, stop: StopSignal) throws(TransformFailure) -> ImageSize {
            throw TransformFailure(.transformFailed, "not called")
        }
        func verify(_ request: VerificationRequest, stop: StopSignal) throws(TransformFailure) {
            throw TransformFailure(.transformFailed, "not called")
        }
    }

    @Test("caps: iOS's without a transformation; the source cap for images with one; convertible types only then")
    func caps() {
        let limits = Enricher.Configuration.Limits()
        let plain = BodyCaps(limits: limits, transform: Enricher.Configuration.Transform())
        #expect(plain.beforeType == 50_000_000)
        #expect(plain.cap(for: .supported(.jpeg))?.bytes == 10_000_000)
        #expect(plain.cap(for: .supported(.mp3))?.bytes == 5_000_000)
        #expect(plain.cap(for: .convertible(.webp, "image/webp")) == nil)
        var transform = Self.transforming
        transform.maximumSourceBytes = 80_000_000
        let transforming = BodyCaps(limits: limits, transform: transform)
        #expect(transforming.beforeType == 80_000_000)
        #expect(transforming.cap(for: .supported(.png))?.bytes == 80_000_000)
        #expect(transforming.cap(for: .supported(.mp4))?.bytes == 50_000_000)
        #expect(transforming.cap(for: .supported(.mp3))?.bytes == 5_000_000)
        #expect(transforming.cap(for: .convertible(.heic, "image/heic"))?.type == .heic)
        transform.transcode = false
        #expect(BodyCaps(limits: limits, transform: transform).cap(for: .convertible(.heic, "image/heic")) == nil)
        #expect(BodyCaps(limits: limits, transform: transform).cap(for: .unsupported("text/html")) == nil)
    }

    @Test(
        """
        a body is stored and its first bytes handed over once; the commit names its type and leaves the hash to the \
        digest step
        """
    )
    func storeAndCommit() throws {
        let body = body()
        #expect(body.begin(declaredLength: -1) == nil)
        #expect(append(body, Array("hello".utf8)) == nil)
        #expect(body.takeHead() == nil, "fewer than the sniffing window so far")
        #expect(append(body, Array(" world".utf8)) == nil)
        #expect(body.takeHead() == Array("hello wo".utf8))
        #expect(body.takeHead(ended: true) == nil, "handed over once")
        #expect(body.decide(.supported(.jpeg)) == .accepted)
        let provenance = FetchedMedia.Provenance(redirects: ["https://example.com/b"], contentType: "text/plain")
        let stored = try #require(self.stored(body.commit(validators: Validators(), provenance: provenance)))
        #expect(stored.type == .jpeg && stored.bytes == 11 && stored.path.hasSuffix(".jpg"))
        #expect(stored.media(sha256: "ab").provenance == provenance)
        #expect(try String(contentsOfFile: stored.path, encoding: .utf8) == "hello world")
        // The file as committed, as its path leads to it now: what the service's index keeps instead of an `lstat`.
        var info = stat()
        #expect(lstat(stored.path, &info) == 0)
        #expect(stored.identity != nil && stored.identity == FileIdentity(info) && stored.identity?.bytes == 11)
        #expect(stored.media(sha256: "ab").identity == stored.identity)
    }

    @Test(
        """
        a body within the memory allowed is held, nothing written, until the fetching task stores it whole; its bytes \
        go back once it is stored or discarded
        """
    )
    func heldThenStored() throws {
        let memory = BodyMemory(bodyBytes: 64, totalBytes: 1000)
        var body: MediaBody? = self.body(memory: memory)
        #expect(fill(body!, count: 50, chunk: 7, declared: 50) == nil)
        #expect(memory.inUse == 50, "the declared length reserved")
        #expect(entries().isEmpty, "nothing written while held")
        let provenance = FetchedMedia.Provenance(redirects: [], contentType: "image/jpeg")
        var held = self.held(body!.commit(validators: Validators(), provenance: provenance))
        body = nil
        #expect(held?.bytes == (0..<50).map { UInt8($0) } && held?.type == .jpeg && held?.provenance == provenance)
        #expect(memory.inUse == 50, "held until the fetching task is done with it")
        let spares = SpareAttachments(root: root, makesSpares: false, makesFolders: false)
        let stored = try #require(try held?.store(in: spares).get())
        #expect(stored.bytes == 50 && stored.path.hasSuffix(".jpg") && stored.identity?.bytes == 50)
        #expect(FileManager.default.contents(atPath: stored.path) == Data((0..<50).map { UInt8($0) }))
        // Given back once written, not when the fetching task lets go of it (after the transformation).
        #expect(memory.inUse == 0 && held?.bytes == [], "the bytes let go of once stored")
        held = nil
        #expect(memory.inUse == 0)
        // A held body refused before it is stored gives its bytes back at once too.
        let refused = self.body(memory: memory)
        #expect(fill(refused, count: 20, chunk: 20, declared: 20) == nil)
        let discarded = try #require(self.held(refused.commit(validators: Validators(), provenance: provenance)))
        #expect(memory.inUse == 20)
        discarded.discard()
        #expect(memory.inUse == 0 && discarded.bytes == [])
    }

    @Test(
        """
        a body that outgrows the memory allowed (unknown length) goes to its file whole: what was held, then the rest; \
        one declared larger, or one past the total, goes there from its first byte
        """
    )
    func outgrowsMemory() throws {
        let memory = BodyMemory(bodyBytes: 100, totalBytes: 150)
        let grown = body(memory: memory)
        #expect(fill(grown, count: 300, chunk: 30) == nil)
        #expect(memory.inUse == 0, "given back once written to the file")
        let file = try #require(stored(grown.commit(validators: Validators(), provenance: .init())))
        let expected = Data((0..<300).map { UInt8(truncatingIfNeeded: $0) })
        #expect(FileManager.default.contents(atPath: file.path) == expected)
        let declaredLarger = body(memory: memory)
        #expect(declaredLarger.begin(declaredLength: 101) == nil)
        #expect(memory.inUse == 0 && entries().count == 4, "its file made at once: \(entries())")
        declaredLarger.discard()
        // Two bodies of 80 declared: the second would take the total past 150.
        let first = body(memory: memory)
        let second = body(memory: memory)
        #expect(fill(first, count: 80, chunk: 80, declared: 80) == nil)
        #expect(fill(second, count: 80, chunk: 80, declared: 80) == nil)
        #expect(memory.inUse == 80)
        _ = try #require(held(first.commit(validators: Validators(), provenance: .init())))
        _ = try #require(stored(second.commit(validators: Validators(), provenance: .init())))
        #expect(memory.inUse == 0, "the held body freed")
    }

    /// A spare buffer of `memory` with room for `capacity`, or a new one, as a held body takes it.
    static func buffer(_ memory: BodyMemory, _ capacity: Int) -> [UInt8] {
        if let spare = memory.spare(fitting: capacity) { return spare }
        var fresh: [UInt8] = []
        fresh.reserveCapacity(capacity)
        return fresh
    }

    /// Where `buffer`'s storage is.
    static func storage(_ buffer: [UInt8]) -> UnsafeRawPointer? {
        buffer.withUnsafeBytes { $0.baseAddress }
    }

    @Test(
        """
        a buffer given back is kept empty for the next body, its storage reused: the smallest that fits and is at most \
        twice as large; kept within a quarter of the total, and at most 64 of them
        """
    )
    func spareBuffers() {
        let memory = BodyMemory(bodyBytes: 200_000, totalBytes: 2_000_000)
        #expect(memory.spareLimit == 500_000 && memory.spareBytes == 0)
        var first = Self.buffer(memory, 100_000)
        first.append(contentsOf: [UInt8](repeating: 7, count: 100_000))
        let firstCapacity = first.capacity
        let firstStorage = Self.storage(first)
        memory.recycle(consume first)
        #expect(memory.spareBytes == firstCapacity)
        // Too large for a body of 30,000 (more than twice): a new buffer, the spare kept.
        let small = Self.buffer(memory, 30_000)
        #expect(small.capacity >= 30_000 && Self.storage(small) != firstStorage && memory.spareBytes == firstCapacity)
        let reused = Self.buffer(memory, 90_000)
        #expect(reused.isEmpty && reused.capacity == firstCapacity, "emptied, its capacity kept")
        #expect(Self.storage(reused) == firstStorage && memory.spareBytes == 0, "the same storage")
        // Of two that fit, the smaller; one more than twice as large as asked is left.
        let large = Self.buffer(memory, 180_000)
        let largeStorage = Self.storage(large)
        memory.recycle(consume large)
        memory.recycle(consume reused)
        #expect(Self.storage(Self.buffer(memory, 95_000)) == firstStorage)
        #expect(Self.storage(Self.buffer(memory, 80_000)) != largeStorage, "more than twice 80,000")
        #expect(Self.storage(Self.buffer(memory, 150_000)) == largeStorage && memory.spareBytes == 0)
        #expect(memory.inUse == 0, "spares are not reservations")
        #expect(memory.reallocated == 0, "every buffer given back unshared")
        // At most a quarter of the total kept (250,000): a buffer given back when they are full takes the place of
        // the oldest, so the spares follow the sizes that come now.
        let bounded = BodyMemory(bodyBytes: 200_000, totalBytes: 1_000_000)
        var storages: [UnsafeRawPointer?] = []
        for _ in 0..<3 {
            let buffer = [UInt8](repeating: 1, count: 100_000)
            storages.append(Self.storage(buffer))
            bounded.recycle(consume buffer)
        }
        #expect(bounded.spareBytes >= 200_000 && bounded.spareBytes <= 250_000, "\(bounded.spareBytes)")
        let newest = Set([Self.storage(Self.buffer(bounded, 100_000)), Self.storage(Self.buffer(bounded, 100_000))])
        #expect(newest == Set(storages.dropFirst()), "the two newest kept")
        for _ in 0..<2 { bounded.recycle([UInt8](repeating: 1, count: 100_000)) }
        let larger = [UInt8](repeating: 1, count: 200_000)
        let largerStorage = Self.storage(larger)
        bounded.recycle(consume larger)
        #expect(bounded.spareBytes >= 200_000 && bounded.spareBytes < 250_000, "both old ones gone for the larger")
        #expect(Self.storage(Self.buffer(bounded, 150_000)) == largerStorage && bounded.spareBytes == 0)
        #expect(bounded.reallocated == 0)
        // At most `spareCount` buffers, however small: the newest kept, the oldest gone first.
        let tiny = BodyMemory(bodyBytes: 1_000, totalBytes: 4_000_000)
        var tinyStorages: [UnsafeRawPointer?] = []
        for _ in 0..<(BodyMemory.spareCount + 36) {
            let buffer = [UInt8](repeating: 1, count: 1_000)
            tinyStorages.append(Self.storage(buffer))
            tiny.recycle(consume buffer)
        }
        #expect(tiny.spareBuffers == BodyMemory.spareCount, "\(tiny.spareBuffers)")
        #expect(tiny.spareBytes <= 2_000 * BodyMemory.spareCount, "\(tiny.spareBytes)")
        let taken = Self.buffer(tiny, 1_000)
        #expect(Set(tinyStorages.suffix(BodyMemory.spareCount)).contains(Self.storage(taken)), "one of the newest")
        #expect(tiny.spareBuffers == BodyMemory.spareCount - 1)
    }

    @Test("a held body's buffer goes back for the next body when it is stored, refused, or goes to its file")
    func heldBuffersReused() throws {
        let memory = BodyMemory(bodyBytes: 1_000, totalBytes: 10_000)
        let provenance = FetchedMedia.Provenance(redirects: [], contentType: "image/jpeg")
        let spares = SpareAttachments(root: root, makesSpares: false, makesFolders: false)
        // Stored.
        let stored = body(memory: memory)
        #expect(fill(stored, count: 500, chunk: 100, declared: 500) == nil)
        let held = try #require(self.held(stored.commit(validators: Validators(), provenance: provenance)))
        #expect(memory.spareBytes == 0)
        _ = try held.store(in: spares).get()
        #expect(memory.spareBytes >= 500 && memory.inUse == 0, "\(memory.spareBytes)")
        // The next body takes it, its whole capacity reserved.
        let spare = memory.spareBytes
        let next = body(memory: memory)
        #expect(next.begin(declaredLength: 400) == nil)
        #expect(memory.spareBytes == 0 && memory.inUse == spare)
        next.discard()
        #expect(memory.spareBytes >= 500, "given back by a body discarded while it was received")
        // Refused once held.
        let refused = body(memory: memory)
        #expect(fill(refused, count: 450, chunk: 450, declared: 450) == nil)
        let refusedHeld = try #require(self.held(refused.commit(validators: Validators(), provenance: provenance)))
        #expect(memory.spareBytes == 0)
        refusedHeld.discard()
        #expect(memory.spareBytes >= 450)
        // Outgrew memory: what was held written to its file, its buffer given back.
        let grown = body(memory: memory)
        #expect(fill(grown, count: 3_000, chunk: 300) == nil)
        #expect(memory.spareBytes >= 450 && memory.inUse == 0)
        _ = try #require(self.stored(grown.commit(validators: Validators(), provenance: provenance)))
        #expect(memory.reallocated == 0, "every buffer given back unshared")
        // A spare whose capacity would take the total past its bound goes back: the body gets a new buffer of its
        // declared length when that fits, else goes to its file.
        let full = BodyMemory(bodyBytes: 1_000, totalBytes: 2_480)
        let first = body(memory: full)
        #expect(fill(first, count: 500, chunk: 500, declared: 500) == nil)
        _ = try #require(self.held(first.commit(validators: Validators(), provenance: provenance))).store(in: spares)
        let kept = full.spareBytes
        #expect(kept >= 500 && full.inUse == 0)
        let large = [body(memory: full), body(memory: full)]
        for body in large { #expect(body.begin(declaredLength: 1_000) == nil) }
        #expect(full.inUse == 2_000 && full.spareBytes == kept)
        #expect(kept > 480, "a spare of \(kept) would take 2,000 past 2,480")
        let fresh = body(memory: full)
        #expect(fill(fresh, count: 450, chunk: 450, declared: 450) == nil)
        #expect(full.inUse == 2_450 && full.spareBytes == kept, "the spare given back, a new buffer of 450 held")
        let freshHeld = try #require(self.held(fresh.commit(validators: Validators(), provenance: provenance)))
        let filed = body(memory: full)
        #expect(fill(filed, count: 450, chunk: 450, declared: 450) == nil)
        #expect(full.inUse == 2_450 && full.spareBytes == kept, "the spare given back, nothing reserved")
        _ = try #require(self.stored(filed.commit(validators: Validators(), provenance: provenance)))
        freshHeld.discard()
        for body in large { body.discard() }
        #expect(full.inUse == 0 && full.reallocated == 0)
    }

    @Test("a held body refused or discarded gives its memory back and leaves nothing")
    func heldDiscarded() {
        let memory = BodyMemory(bodyBytes: 100, totalBytes: 1000)
        let refused = body(memory: memory)
        #expect(refused.begin(declaredLength: -1) == nil)
        #expect(append(refused, [1, 2, 3]) == nil)
        #expect(memory.inUse == 100, "a first 64 KiB asked for, at most the largest body held")
        #expect(refused.decide(.unsupported("text/html")) == .refused(FetchFailure(.unsupportedType, "text/html")))
        refused.discard()
        #expect(memory.inUse == 0)
        let spare = memory.spareBytes
        #expect(spare >= 100, "its buffer kept for the next body")
        var dropped: MediaBody? = body(memory: memory)
        #expect(fill(dropped!, count: 90, chunk: 10) == nil)
        #expect(memory.inUse == spare && memory.spareBytes == 0, "the spare taken, its whole capacity reserved")
        dropped = nil
        #expect(memory.inUse == 0, "given back when the transfer lets go of it")
        #expect(entries().isEmpty)
        #expect(memory.reallocated == 0, "every buffer given back unshared")
    }

    @Test("a short body hands its bytes over when it ends")
    func shortBody() {
        let body = body()
        #expect(body.begin(declaredLength: 3) == nil)
        #expect(append(body, [1, 2, 3]) == nil)
        #expect(body.takeHead() == nil)
        #expect(body.takeHead(ended: true) == [1, 2, 3])
        body.discard()
        #expect(entries().isEmpty)
    }

    @Test("the cap: a declared length over it refuses before any file; bytes over it stop the body")
    func cap() {
        var limits = Enricher.Configuration.Limits()
        limits.imageBytes = 10
        limits.audioBytes = 10
        limits.videoBytes = 20
        let declared = body(limits: limits)
        #expect(declared.begin(declaredLength: 21)?.code == .tooLarge)
        #expect(entries().isEmpty)
        let grown = body(limits: limits)
        #expect(grown.begin(declaredLength: -1) == nil)
        #expect(append(grown, [UInt8](repeating: 0, count: 12)) == nil, "within the largest cap before the type")
        // Now known to be an image: over its cap.
        #expect(
            grown.decide(.supported(.png)) == .refused(FetchFailure(.tooLarge, "more than 10 bytes (the image cap)")))
        grown.discard()
        #expect(entries().isEmpty)
        let typed = body(limits: limits)
        #expect(typed.begin(declaredLength: -1) == nil)
        #expect(append(typed, [1]) == nil)
        #expect(typed.decide(.supported(.mp4)) == .accepted)
        #expect(append(typed, [UInt8](repeating: 0, count: 20))?.code == .tooLarge)
        typed.discard()
    }

    @Test("a convertible image is refused without a transformation, taken under the source cap with one")
    func convertible() {
        let refused = body()
        #expect(refused.begin(declaredLength: -1) == nil)
        #expect(
            refused.decide(.convertible(.webp, "image/webp (RIFF)"))
                == .refused(FetchFailure(.unsupportedType, "image/webp (RIFF)")))
        refused.discard()
        let taken = body(transform: Self.transforming)
        #expect(taken.begin(declaredLength: 40_000_000) == nil)
        #expect(taken.decide(.convertible(.webp, "image/webp (RIFF)")) == .accepted)
        #expect(taken.type == .webp)
        taken.discard()
        #expect(entries().isEmpty)
    }

    @Test("without storage (a probe) nothing is written; the declared length is the probed size")
    func probe() {
        let body = body(storing: false)
        #expect(body.begin(declaredLength: 1234) == nil)
        #expect(append(body, [UInt8](repeating: 7, count: 9)) == nil)
        #expect(body.takeHead()?.count == 8)
        #expect(body.probedSize == 1234)
        #expect(entries().isEmpty)
    }

    @Test(
        """
        a probe that asks for more than the sniffing window keeps its first bytes whole across chunks, as far as it \
        asked, and hands the sniffer the window alone; a stored body keeps the window only
        """)
    func probeBytes() {
        let bytes = (0..<100).map { UInt8($0) }
        let memory = BodyMemory(bodyBytes: 1 << 20, totalBytes: 1000)
        func probe(asking: Int) -> MediaBody {
            MediaBody(
                caps: BodyCaps(limits: .init(), transform: .init()), sniffBytes: 8, storage: nil, memory: memory,
                probeBytes: asking)
        }
        for chunk in [1, 5, 7, 30, 100] {
            let body = probe(asking: 40)
            #expect(body.begin(declaredLength: 100) == nil)
            var handed: [UInt8]?
            var chunks = 0
            for start in stride(from: 0, to: 100, by: chunk) where !body.probeHasAll {
                #expect(append(body, Array(bytes[start..<min(start + chunk, 100)])) == nil)
                chunks += 1
                if let head = body.takeHead() { handed = head }
            }
            #expect(handed == Array(bytes.prefix(8)), "chunks of \(chunk)")
            #expect(body.probedHead == Array(bytes.prefix(40)), "chunks of \(chunk)")
            #expect(chunks == (40 + chunk - 1) / chunk, "received past what was asked, in chunks of \(chunk)")
        }
        #expect(memory.inUse == 0)
        // Asking for less than the window keeps the window; a stored body ignores the ask.
        let less = probe(asking: 3)
        #expect(less.begin(declaredLength: -1) == nil)
        #expect(append(less, Array(bytes.prefix(5))) == nil)
        #expect(!less.probeHasAll)
        #expect(append(less, Array(bytes[5..<20])) == nil)
        #expect(less.probeHasAll && less.probedHead == Array(bytes.prefix(8)))
        let root = root
        let stored = MediaBody(
            caps: BodyCaps(limits: .init(), transform: .init()), sniffBytes: 8,
            storage: { () throws(StoreError) in try root.begin() }, memory: memory, probeBytes: 40)
        #expect(stored.begin(declaredLength: 100) == nil)
        #expect(append(stored, bytes) == nil)
        #expect(stored.takeHead() == Array(bytes.prefix(8)))
        #expect(stored.probedHead == Array(bytes.prefix(8)), "a stored body keeps the window alone")
        #expect(memory.inUse == 100, "a stored body reserves its held bytes alone, nothing for a probe's")
    }

    @Test(
        """
        the bytes a probe keeps past the sniffing window are reserved in the loop's memory for held bodies while it \
        lives; one that finds no room keeps the window alone; without that memory, the window alone
        """)
    func probeBytesReserved() {
        let bytes = (0..<600).map { UInt8(truncatingIfNeeded: $0) }
        let memory = BodyMemory(bodyBytes: 1 << 20, totalBytes: 1000)
        func probe(asking: Int, memory: BodyMemory?) -> MediaBody {
            let body = MediaBody(
                caps: BodyCaps(limits: .init(), transform: .init()), sniffBytes: 8, storage: nil, memory: memory,
                probeBytes: asking)
            #expect(body.begin(declaredLength: -1) == nil)
            #expect(append(body, bytes) == nil)
            return body
        }
        do {
            let first = probe(asking: 508, memory: memory)
            #expect(memory.inUse == 500)
            #expect(first.probedHead.count == 508)
            let second = probe(asking: 508, memory: memory)
            withExtendedLifetime((first, second)) {
                #expect(memory.inUse == 1000)
                let refused = probe(asking: 9, memory: memory)
                #expect(refused.probedHead == Array(bytes.prefix(8)), "no room: the window alone")
                #expect(memory.inUse == 1000)
            }
        }
        #expect(memory.inUse == 0, "given back when freed")
        #expect(probe(asking: 508, memory: nil).probedHead.count == 8)
    }

    @Test("dimensions from the first bytes: PNG's IHDR, JPEG's first frame after its EXIF; nil when not there")
    func dimensions() {
        func head(_ name: String, _ count: Int = 4096) -> [UInt8] { Array(fixture(name).prefix(count)) }
        #expect(ImageDimensions.parse(head("photo.jpg"), type: .jpeg) == ImageSize(width: 160, height: 120))
        #expect(ImageDimensions.parse(head("photo-exif.jpg"), type: .jpeg) == ImageSize(width: 160, height: 120))
        #expect(
            ImageDimensions.parse(head("plain-100mp.png", 24), type: .png) == ImageSize(width: 10_000, height: 10_000))
        #expect(ImageDimensions.parse(head("photo.jpg", 20), type: .jpeg) == nil, "the frame is beyond the bytes given")
        #expect(
            ImageDimensions.parse(head("anim.gif"), type: .gif) == nil, "a GIF's frames are the converter's to count")
        #expect(ImageDimensions.parse(head("logo.png", 23), type: .png) == nil)
        #expect(ImageDimensions.parse(head("chime.mp3"), type: .jpeg) == nil)
    }
}
