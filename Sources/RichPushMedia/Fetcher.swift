import RichPushCore
import RichPushFetch
import RichPushStore

/// Fetches media URLs to attachment files: many at once, through one curl multi handle driven by its own
/// thread, each under a deadline, typed by its bytes, streamed to disk (or, when small, held in memory until
/// complete and written whole by the fetching task: `HeldBody`). The attachment pipeline's stages in their order:
/// the transfer (`FetchLoop`, which hands each body's first bytes to the sniffer, `SniffService`), then the digest
/// and the structure (`DigestService`, or from a held body's bytes), then the transformation (`TransformStep`). The
/// media cache and the publisher sit above it, in the engine's order.
///
/// A `Fetcher` is safe to share between tasks. Call `await shutdown()` when done; it cancels whatever is in
/// flight.
public final class Fetcher: Sendable {
    private let loop: FetchLoop
    /// Hashes each stored file once it is complete, off the loop's thread.
    private let digests: DigestService
    /// The settings every transfer of this fetcher follows when it shares another's loop (`init(sharing:...)`);
    /// nil when the loop is its own (the loop's settings are then this fetcher's).
    private let transferSettings: FetchSettings?
    /// Whether this fetcher made its loop, and so stops it (with the digests' thread): a fetcher sharing another's
    /// stops only its own transformation.
    private let ownsLoop: Bool
    /// What happens to images after their download, when a converter is configured.
    private let transformStep: TransformStep?
    /// The attachments root, opened once for every transfer (and the media cache).
    package let root: AttachmentRoot
    /// Counts for operators; the media cache records its lookups here too.
    package let statistics: StatisticsCounter

    /// A fetcher with these settings, already validated (the engine's `init(configuration:)` validates them
    /// first).
    /// - Throws: `FetcherError` when libmagic's database cannot be loaded, or when the attachments root is refused
    ///   (a symbolic link, not a directory, another user's, writable by group or others; see `AttachmentStore`) or
    ///   cannot be made.
    package init(
        network: NetworkSettings, limits: LimitSettings, store: AttachmentStore, transform: TransformSettings,
        names: SettingNames = SettingNames()
    ) throws(FetcherError) {
        do {
            root = try store.open()
        } catch {
            throw FetcherError(detail: error.detail, field: "store.root")
        }
        let spares = SpareAttachments(root: root, makesSpares: !root.isInMemory)
        digests = DigestService()
        statistics = StatisticsCounter()
        transferSettings = nil
        ownsLoop = true
        let sniffer: SniffService
        do {
            sniffer = try SniffService()
        } catch {
            throw FetcherError(detail: "libmagic: \(error.detail)")
        }
        loop = FetchLoop(
            settings: FetchSettings(
                network: network, limits: limits, spares: spares, caps: BodyCaps(limits: limits, transform: transform),
                names: names),
            sniffer: sniffer)
        let root = root
        transformStep = transform.converter.map { converter in
            TransformStep(
                settings: transform, converter: converter, imageBytes: limits.imageBytes, root: root, names: names)
        }
    }

    /// A fetcher that runs its transfers on `base`'s loop, under its own network policy, limits and transformation
    /// (a tenant's, in a service hosting several): it shares `base`'s loop thread and curl multi handle (their
    /// connection bounds, and the connections curl keeps, each judged again under this fetcher's policy before it
    /// carries a request: CURLOPT_PREREQFUNCTION), its digests' thread, attachments root and statistics; a converter
    /// gets threads of its own. Its `shutdown()` stops only what is its own; `base`'s stops the loop for both.
    ///
    /// `network.resolve` must be `base`'s: curl keeps pinned names in the multi handle's DNS cache, which every
    /// transfer on the loop reads (a name one fetcher pins would send the other's transfers to that address).
    package init(
        sharing base: Fetcher, network: NetworkSettings, limits: LimitSettings, transform: TransformSettings,
        names: SettingNames = SettingNames()
    ) {
        precondition(
            network.resolve == base.network.resolve, "a fetcher sharing a loop pins the names its loop pins")
        loop = base.loop
        digests = base.digests
        root = base.root
        statistics = base.statistics
        ownsLoop = false
        transferSettings = FetchSettings(
            network: network, limits: limits, spares: base.spares,
            caps: BodyCaps(limits: limits, transform: transform), names: names)
        let root = root
        transformStep = transform.converter.map { converter in
            TransformStep(
                settings: transform, converter: converter, imageBytes: limits.imageBytes, root: root, names: names)
        }
    }

    /// The network settings of this fetcher's transfers.
    private var network: NetworkSettings { (transferSettings ?? loop.settings).network }

    /// Where this fetcher's transfers write their bodies, and the media cache's links get their directories.
    package var spares: SpareAttachments { (transferSettings ?? loop.settings).spares }

    /// Whether attachment directories are made ahead (`SpareAttachments`): not for a root on a tmpfs.
    package var makesSpares: Bool { spares.makesSpares }

    /// The bytes of bodies held in memory now, received or not yet stored (`LimitSettings.heldBodyBytes`).
    package var heldBodyBytes: Int { loop.bodyMemory.inUse }

    /// The bytes of the empty buffers kept for the next bodies held (`BodyMemory.spareLimit`).
    package var spareBufferBytes: Int { loop.bodyMemory.spareBytes }

    /// How many held bodies' buffers were given back still shared, and emptied into new storage
    /// (`BodyMemory.reallocated`).
    package var spareBuffersReallocated: Int { loop.bodyMemory.reallocated }

    /// How many images are being transformed now.
    package var transformsRunning: Int { transformStep?.running ?? 0 }

    /// How many images wait to be transformed now.
    package var transformsWaiting: Int { transformStep?.waiting ?? 0 }

    /// The process ids of the SVG renderer's children running now (`TransformSettings.svgRenderer`).
    package var svgRenderers: [Int32] { transformStep?.renderers ?? [] }

    deinit {
        if ownsLoop {
            loop.stop {}
            digests.stop()
        }
        transformStep?.stop()
    }

    /// Fetches `url` into a new attachment directory, finishing by `deadline`; then, when a converter is
    /// configured (`Enricher.Configuration.Transform`), turns an image into one iOS attaches, by the same deadline.
    /// A file whose structure is damaged (`MediaStructure`, walked as the file is hashed: JPEG, PNG, GIF, MP3, WAV,
    /// AIFF, M4A, MP4, AVI, MPEG) is refused with `damaged-image` (an image) or `damaged-media` (audio, video) when
    /// a phone would show or play nothing of it, else attached with its `damage` said; with a converter, one whose
    /// structure declares more pixels than allowed (a GIF's logical screen, an APNG's frames) is refused with
    /// `too-many-pixels`.
    ///
    /// Never throws: every way a fetch can end is a `FetchFailure` with a stable code. Cancelling the calling
    /// task cancels the transfer (code `cancelled`) and removes its partial file before this returns.
    public func fetch(_ url: String, deadline: ContinuousClock.Instant) async -> Result<FetchedMedia, FetchFailure> {
        await unconditionalFetch(url, deadline: deadline)
    }

    /// Fetches `url`, conditionally when `validators` are given (a 304 ends it `notModified`): stored, hashed,
    /// its structure walked, transformed.
    ///
    /// The transfer's wait is here and the work on the stored body in `finish`: an async function's frame holds
    /// every value any of its suspensions needs, for as long as it runs, so this one, which waits as long as the
    /// origin takes (a payload's every reference waits in it), holds only the transfer's outcome.
    package func fetch(
        _ url: String, deadline: ContinuousClock.Instant, validators: Validators
    ) async -> MediaFetchOutcome {
        let deadline = deadline.withinFurthest
        switch await loop.fetch(
            TransferRequest(url: url, deadline: deadline, validators: validators, settings: transferSettings))
        {
        case .stored(let body): return await finish(body, deadline: deadline)
        case .held(let body): return await finish(held: body, deadline: deadline)
        case .notModified(let validators): return .notModified(validators)
        case .failed(let failure): return .failed(failure)
        case .probed: preconditionFailure("a fetch that is not a probe probes nothing")
        }
    }

    /// What `body`, just stored, becomes: hashed and checked (its size again, its structure, the pixels it
    /// declares), then transformed by `deadline`; its file is removed when refused.
    private func finish(_ body: StoredBody, deadline: ContinuousClock.Instant) async -> MediaFetchOutcome {
        statistics.record { $0.fetchedBytes += body.bytes }
        let digest: FileDigest
        switch await digests.digest(body.path, bytes: body.bytes, checking: body.type) {
        case .success(let read) where read.bytes == body.bytes:
            digest = read
        case .success(let read):
            root.remove(directory: body.directory, path: body.path)
            return .failed(
                FetchFailure(
                    .storeFailed,
                    "\(body.path) changed size after it was stored: \(read.bytes) bytes, not \(body.bytes)"))
        case .failure(let error):
            root.remove(directory: body.directory, path: body.path)
            return .failed(FetchFailure(.storeFailed, error.detail))
        }
        if let refusal = refusal(of: digest, type: body.type) {
            root.remove(directory: body.directory, path: body.path)
            return .failed(refusal)
        }
        return await transform(body.media(sha256: digest.sha256), damage: digest.damage, deadline: deadline)
    }

    /// What `body`, received whole into memory, becomes: hashed and checked from its bytes, then stored in a new
    /// attachment (only when it is not refused) and transformed by `deadline`. Its memory goes back once it is stored
    /// or refused, not after the transformation (`HeldBody.store(in:)`).
    private func finish(held body: HeldBody, deadline: ContinuousClock.Instant) async -> MediaFetchOutcome {
        // The bytes are not kept here: once stored, their buffer goes back for the next body (`BodyMemory`), and a
        // copy held here would make it allocate anew.
        statistics.record { $0.fetchedBytes += body.count }
        let digest: FileDigest
        switch await digests.digest(held: body.bytes, checking: body.type) {
        case .success(let taken): digest = taken
        case .failure(let error):
            body.discard()
            return .failed(FetchFailure(.storeFailed, error.detail))
        }
        if let refusal = refusal(of: digest, type: body.type) {
            body.discard()
            return .failed(refusal)
        }
        switch body.store(in: spares) {
        case .success(let stored):
            return await transform(stored.media(sha256: digest.sha256), damage: digest.damage, deadline: deadline)
        case .failure(let failure):
            return .failed(failure)
        }
    }

    /// Why a body of `type` and `digest` is refused: its structure shows (plays) nothing or is unbounded to decode
    /// (a JPEG of more scans than `JPEGStructure.maximumScans`), or it declares more pixels
    /// than allowed (what the converter's header may not say: a GIF's logical screen, an APNG's frames, counted here
    /// before any decoder sees the file). Nil when it is not.
    private func refusal(of digest: FileDigest, type: MediaType) -> FetchFailure? {
        if case .showsNothing(let detail)? = digest.structure {
            let shows = type.kind == .image ? "shows" : "plays"
            return FetchFailure(.damaged(type), "\(detail); a phone \(shows) nothing of it")
        }
        if case .unbounded(let detail)? = digest.structure { return FetchFailure(.tooManyPixels, detail) }
        if let declared = digest.declared { return pixelRefusal(declared: declared) }
        return nil
    }

    /// `media`, with the `damage` its structure showed, transformed by `deadline` when a converter is configured.
    private func transform(
        _ media: FetchedMedia, damage: String?, deadline: ContinuousClock.Instant
    ) async -> MediaFetchOutcome {
        var media = media
        if let damage { media.damage = damage }
        switch await transformStep?.transform(media, deadline: deadline) ?? .success(media) {
        case .success(var attached):
            // A transformation writes a new file; where its source came from stays where it came from.
            attached.provenance = media.provenance
            return .stored(attached)
        case .failure(let failure): return .failed(failure)
        }
    }

    /// Whether a converter is configured: images are transformed, and Android variants made.
    package var converts: Bool { transformStep != nil }

    /// The Android variant of `media` (an image `variant` did not keep), made on the transformation's threads by
    /// `deadline` into a new attachment (`media`'s file is then removed, as it is on a failure): a still JPEG or PNG
    /// within FCM's Android limit and the variant's bound, upright, without metadata. Without a converter, the
    /// refusal that says one is needed.
    package func androidVariant(
        of media: FetchedMedia, _ variant: AndroidVariant, reasons: [String], deadline: ContinuousClock.Instant
    ) async -> Result<FetchedMedia, FetchFailure> {
        guard let transformStep else {
            root.remove(media)
            return .failure(variant.refusal(media, reasons: reasons))
        }
        return await transformStep.transform(media, deadline: deadline, for: .android(variant)).map { made in
            var made = made
            made.provenance = media.provenance
            return made
        }
    }

    /// What a probe saw of a URL's media.
    package struct Probed: Sendable {
        /// The sniffed type.
        package var type: MediaType
        /// The declared length, else the bytes seen.
        package var bytes: Int
        /// What an image's first bytes declare of its pixels (`MediaStructure.declared(byHead:type:)`).
        package var declared: ImageHeader?
        /// The first bytes (those the sniffer read).
        package var head: [UInt8]
        /// Whether `head` is the whole body (it ended within the bytes read).
        package var whole: Bool
        /// A HEIC's or AVIF's refusal by its coded frames (`too-many-pixels`, the transformation's rule), as far as
        /// the first bytes read show them, however many more than `head` were read for it; nil otherwise (and always
        /// without a converter).
        package var codedPixelRefusal: FetchFailure?
    }

    /// Fetches only the headers and the first bytes of `url`, enough to tell what it is; stores nothing. A HEIC or
    /// AVIF, whose frames the transformation counts (with a converter), is asked for again, up to `heifProbeRounds`
    /// times and `heifProbeBytes`, as far as its boxes say more of its first bytes would show more
    /// (`HEIFCodedFrames.wanted`: a `meta` box longer than the sniffing window, an item's first data past it).
    /// - Returns: what those showed, or why it could not be told: the first answer's bytes, and the frames judged over
    ///   all that was read.
    package func probe(_ url: String, deadline: ContinuousClock.Instant) async -> Result<Probed, FetchFailure> {
        let deadline = deadline.withinFurthest
        let first = await probe(url, deadline: deadline, bytes: 0)
        guard case .success(var found) = first, let transformStep, TransformStep.codedTypes.contains(found.type) else {
            return first
        }
        let window = found.head
        // Each answer's boxes read once: for its refusal, and for how many first bytes would show more.
        var coded = HEIFCodedFrames.read(found.head, prefix: true)
        found.codedPixelRefusal = transformStep.codedPixelRefusal(firstBytes: coded, type: found.type)
        for _ in 0..<Self.heifProbeRounds {
            guard !found.whole, found.head.count < Self.heifProbeBytes, let wanted = coded.wanted else { break }
            // Nothing past the window is held while the next answer comes: the caller keeps its probes until all of
            // a payload's are in (`explain`), and they may be many (`serve`); those in flight are reserved in the
            // loop's memory (`MediaBody`). A later answer that is shorter, or of another type, changes nothing.
            let read = found.head.count
            found.head = window
            let asked = min(wanted, Self.heifProbeBytes)
            guard case .success(var more) = await probe(url, deadline: deadline, bytes: asked),
                more.type == found.type, more.head.count > read
            else { break }
            coded = HEIFCodedFrames.read(more.head, prefix: true)
            more.codedPixelRefusal = transformStep.codedPixelRefusal(firstBytes: coded, type: more.type)
            found = more
        }
        found.head = window
        return .success(found)
    }

    /// The most of a HEIC's or AVIF's first bytes a probe reads: 1 MiB.
    package static let heifProbeBytes = 1 << 20
    /// How many times a HEIC or AVIF is asked for again: 3 (as far as the `meta` box goes, the `meta` box whole, its
    /// items' first data).
    static let heifProbeRounds = 3

    /// A probe keeping the first `bytes` (at least the sniffing window).
    private func probe(_ url: String, deadline: ContinuousClock.Instant, bytes: Int) async
        -> Result<Probed, FetchFailure>
    {
        let request = TransferRequest(
            url: url, deadline: deadline, probe: true, probeBytes: bytes, settings: transferSettings)
        switch await loop.fetch(request) {
        case .probed(let type, let bytes, let head, let whole):
            let declared = MediaStructure.declared(byHead: head, type: type)
            return .success(Probed(type: type, bytes: bytes, declared: declared, head: head, whole: whole))
        case .failed(let failure): return .failure(failure)
        case .stored, .held, .notModified: preconditionFailure("a probe stores nothing and sends no validators")
        }
    }

    /// The refusal (`too-many-pixels`) of an image that declares more pixels than the transformation allows, all
    /// frames together, else nil (and always nil without a converter: nothing is decoded then). The one rule for a
    /// fetched file's structure (`fetch`) and a probe's first bytes (`explain`).
    package func pixelRefusal(declared: ImageHeader) -> FetchFailure? {
        transformStep?.pixelRefusal(declared: declared)
    }

    /// Fetches `url`, finishing within `timeout` from now.
    public func fetch(_ url: String, timeout: Duration) async -> Result<FetchedMedia, FetchFailure> {
        await fetch(url, deadline: .now + timeout)
    }

    /// Cancels every transfer in flight and stops the loop thread, returning once it has stopped (no thread of
    /// the cooperative pool is held meanwhile). Later fetches fail with `cancelled`.
    public func shutdown() async {
        if ownsLoop {
            await loop.stop()
            digests.stop()
        }
        transformStep?.stop()
        // The conversions told to stop remove what they made as they return: a process that ends right after this
        // (`stream` at the end of its input) leaves none of it, unless a converter does not stop within the bound.
        await transformStep?.untilStopped(within: TransformStep.shutdownBound)
    }

    /// `shutdown()` for synchronous code: blocks the calling thread until the loop has stopped. Not for async
    /// code, where it would hold a thread of the cooperative pool: there, `await shutdown()`. Named apart, as
    /// async-http-client's `syncShutdown()`, so that `await fetcher.shutdown()` never picks it.
    @available(*, noasync, message: "it blocks a thread of the cooperative pool; use 'await shutdown()'")
    public func syncShutdown() {
        if ownsLoop {
            loop.stopAndWait()
            digests.stop()
        }
        transformStep?.stop()
    }
}

extension BodyCaps {
    /// The caps of bodies fetched for this transformation: without a converter, iOS's (`limits`); with one, every
    /// image may be as large as `transform.maximumSourceBytes`, and images iOS does not attach are fetched to be
    /// transcoded when `transform.transcode` is on.
    package init(limits: LimitSettings, transform: TransformSettings) {
        self.init(
            limits: limits,
            sourceImageBytes: transform.isEnabled ? max(transform.maximumSourceBytes, limits.imageBytes) : nil,
            transcodes: transform.isEnabled && transform.transcode)
    }
}

extension Fetcher: MediaSource {}

/// The fetcher could not start.
public struct FetcherError: Error, Sendable, CustomStringConvertible {
    /// Why.
    public let detail: String
    /// The configuration field to change, as `ConfigurationError.field` names one (`store.root` when the attachments
    /// root is refused or cannot be made), so that a caller can name its own setting for it (the CLI's
    /// `--attachments-dir`); nil when no setting would help (libmagic's database missing).
    public let field: String?
    public var description: String { detail }

    package init(detail: String, field: String? = nil) {
        self.detail = detail
        self.field = field
    }
}
