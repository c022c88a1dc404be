import Dispatch
import RichPushCore
import RichPushStore

#if canImport(Glibc)
    import Glibc
#endif

/// The step between a download and its attachment that turns an image into one iOS attaches: transcoded when
/// iOS does not attach its type, downscaled when over the image cap or `maximumDimension`, re-encoded without
/// metadata when asked; everything else passes through untouched, at no cost.
///
/// Conversions run on `concurrency` threads of their own (`WorkerThreads`: never the fetch loop, never the
/// cooperative pool), first come first served, each within its payload's deadline: one still waiting at the
/// deadline or its caller's cancellation is withdrawn from the queue and ends then, not when a thread frees; one
/// running is stopped (`StopSignal`); either ends `expired` (or `cancelled`) with no file left. An SVG is converted
/// in a child process when `settings.svgRenderer` names the executable (`SVGRenderer`): stopped, the child is
/// killed and the thread is free at once. A converter that does not stop (librsvg, in process, renders an SVG filter
/// without ever looking at libvips's stop) is left behind after `abandonGrace`: its payload ends `expired` (or
/// `cancelled`) then, and its thread removes what it made whenever it returns. The fetched file is removed once it
/// has been transformed or refused; the result is a new attachment directory of its own.
///
/// The same threads make Android variants (`Target.android`): an FCM message's image for Android, always a still
/// JPEG (opaque) or PNG (alpha) within FCM's 1 MiB and the Android bound (`AndroidVariant`).
final class TransformStep: Sendable {
    private let settings: TransformSettings
    /// How refusals name the settings that would lift them (`transform.maximumPixels`).
    private let names: SettingNames
    private let converter: any ImageConverter
    /// Where an SVG is converted when `settings.svgRenderer` names an executable: a child process each.
    private let renderer: SVGRenderer?
    private let imageBytes: Int
    private let root: AttachmentRoot
    private let threads: WorkerThreads

    /// Whom an image is transformed for.
    enum Target: Sendable {
        /// iOS: the types iOS attaches kept (a GIF stays animated), the image cap, `maximumDimension`.
        case ios
        /// An Android variant: a still JPEG or PNG, within FCM's limit and the variant's bound. Asked only for an
        /// image `AndroidVariant` did not keep, so it is always written anew (a JPEG's or PNG's metadata filtered out
        /// when only that is in the way).
        case android(AndroidVariant)
    }

    struct Job: Sendable {
        var media: FetchedMedia
        var target: Target
        var deadline: ContinuousClock.Instant
        var stop: StopSignal
        /// Hands the job's result to its caller; false when the caller has already been answered (the job was
        /// left behind at its deadline or cancellation), so that the result is the job's to discard.
        var completion: @Sendable (Result<FetchedMedia, FetchFailure>) -> Bool
        /// How to remove the names of the file being written now, if any: taken when the job is answered without
        /// its converter (`withdraw`), so that a converter that does not stop leaves no partial file, even if the
        /// process exits before it returns.
        let output = LockedValue<(@Sendable () -> Void)?>(nil)
    }

    /// How long a running conversion told to stop (its deadline came, or its caller gave up) has to return before
    /// its payload is answered without it: 100 ms. libvips stops between tiles, and then the job ends with no file
    /// left before its payload hears of it; librsvg rendering a filter never looks (one `feTurbulence` of 1,000
    /// octaves ran for more than ten minutes), and a payload must not wait for it past its deadline, nor a shutdown.
    static let abandonGrace = Duration.milliseconds(100)

    /// Re-encodes over the image cap are made again smaller, at most this many times in all.
    static let maximumAttempts = 3

    init(
        settings: TransformSettings, converter: any ImageConverter, imageBytes: Int, root: AttachmentRoot,
        names: SettingNames = SettingNames()
    ) {
        self.settings = settings
        self.names = names
        self.converter = converter
        renderer = settings.svgRenderer.map { SVGRenderer(executable: $0, maximumPixels: settings.maximumPixels) }
        self.imageBytes = imageBytes
        self.root = root
        threads = WorkerThreads(name: "rp-transform", count: settings.concurrency)
    }

    /// Whether `media` goes through the step's threads. Every image's pixel count is checked, even one that needs
    /// no conversion (a phone would decode a bomb attached as is; what a GIF's or PNG's structure declares beyond
    /// its header, the fetcher checked with `pixelRefusal(declared:)`): a JPEG or PNG whose first bytes gave its
    /// dimensions (`ImageDimensions`) within the limits, needing nothing else, passes without leaving the caller's
    /// thread; any other image has its header read by the converter. Audio and video always pass.
    func mayTransform(_ media: FetchedMedia) -> Bool {
        guard media.type.kind == .image else { return false }
        if settings.verifyImages, Self.verified.contains(media.type) { return true }
        guard media.type.isAttachable, let size = media.dimensions else { return true }
        let header = ImageHeader(size: size)
        return pixelRefusal(header) != nil
            || Plan(media: media, header: header, settings: settings, imageBytes: imageBytes).isNeeded
    }

    /// `media` as it is attached: itself when nothing applies, else converted into a new attachment directory
    /// (the fetched one is then removed), or the failure (`too-many-pixels`, `transform-failed`, `expired` at the
    /// deadline, `cancelled` when the calling task is), with the fetched file removed.
    func transform(
        _ media: FetchedMedia, deadline: ContinuousClock.Instant, for target: Target = .ios
    ) async -> Result<FetchedMedia, FetchFailure> {
        if case .ios = target, !mayTransform(media) { return .success(media) }
        if let size = media.dimensions, let refusal = pixelRefusal(ImageHeader(size: size)) {
            // The first bytes already declared too many: refused without a decoder or a thread.
            root.remove(media)
            return .failure(refusal)
        }
        let stop = StopSignal()
        let ticket = LockedValue<WorkerThreads.Ticket?>(nil)
        let answer = Answer()
        let job = Job(media: media, target: target, deadline: deadline, stop: stop) { answer.give($0) }
        let timer = DispatchWorkItem { [self] in withdraw(job, ticket, answer) }
        let remaining = max(0, (deadline - .now).inMilliseconds)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(remaining), execute: timer)
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                answer.await(continuation)
                // The engine's shutdown stops a running job as its deadline would: left behind if it does not stop.
                let queued = threads.submit(stop: { [self] in withdraw(job, ticket, answer) }) { [self] turn in
                    take(job, turn)
                }
                ticket.withLock { $0 = queued }
                // `withdraw` stops the signal before it reads the ticket: a job stopped before the ticket was
                // there (its deadline passed, or its caller gave up) is withdrawn here (if it is already running,
                // that `withdraw` has set its grace).
                if let queued, ended(job) != nil { threads.withdraw(queued) }
            }
        } onCancel: {
            withdraw(job, ticket, answer)
        }
    }

    /// Stops `job` (its deadline came, or its caller gave up): one running is told to stop, and its payload answered
    /// without it if it has not returned within `abandonGrace`; one still waiting for a thread leaves the queue and
    /// ends now, not when a thread frees.
    private func withdraw(_ job: Job, _ ticket: LockedValue<WorkerThreads.Ticket?>, _ answer: Answer) {
        job.stop.stop()
        if let queued = ticket.withLock({ $0 }), threads.withdraw(queued) { return }
        let grace = Int(Self.abandonGrace.inMilliseconds)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(grace)) { [self] in
            let failure = stopped(job)
            // The fetched file goes now (a decoder that has it open reads on; one that opens it later fails): only
            // what the converter is writing waits for it to return.
            _ = answer.give(.failure(failure)) {
                root.remove(job.media)
                job.output.withLock { $0.take() }?()
            }
        }
    }

    /// A job's one answer to its caller: the job's own result, or the failure its deadline or cancellation gave it
    /// when the converter did not return in time; whichever comes first, the other is refused.
    private final class Answer: Sendable {
        private struct State {
            var continuation: CheckedContinuation<Result<FetchedMedia, FetchFailure>, Never>?
            /// An answer given before the caller waited for it.
            var early: Result<FetchedMedia, FetchFailure>?
            var given = false
        }

        private let state = LockedValue(State())

        /// Waits with `continuation` (resumed at once when the answer is already there).
        func await(_ continuation: CheckedContinuation<Result<FetchedMedia, FetchFailure>, Never>) {
            let early = state.withLock { state -> Result<FetchedMedia, FetchFailure>? in
                guard let early = state.early else {
                    state.continuation = continuation
                    return nil
                }
                state.early = nil
                return early
            }
            if let early { continuation.resume(returning: early) }
        }

        /// Gives `result` as the answer, running `first` before the caller hears it; false (and `first` not run) when
        /// one was already given.
        func give(_ result: Result<FetchedMedia, FetchFailure>, first: () -> Void = {}) -> Bool {
            let taken = state.withLock {
                state -> (given: Bool, continuation: CheckedContinuation<Result<FetchedMedia, FetchFailure>, Never>?) in
                guard !state.given else { return (false, nil) }
                state.given = true
                guard let continuation = state.continuation else {
                    state.early = result
                    return (true, nil)
                }
                state.continuation = nil
                return (true, continuation)
            }
            if taken.given { first() }
            taken.continuation?.resume(returning: result)
            return taken.given
        }
    }

    /// How many conversions are running now (for tests that must act while one is).
    var running: Int { threads.running }

    /// How many conversions wait for a thread now (for tests that must act once one does).
    var waiting: Int { threads.waiting }

    /// The process ids of the SVG renderer's children running now (for tests that wait for their end).
    var renderers: [Int32] { renderer?.processes ?? [] }

    /// Ends the threads: a job still queued ends `cancelled` at once, a running one is stopped (`cancelled`).
    func stop() {
        threads.shutdown(.refuse)
    }

    /// Returns once no conversion runs (one told to stop returns when libvips next looks, and removes what it made),
    /// or once `bound` has passed: a converter that does not stop is not waited for past it, and what it made stays
    /// if the process ends first. Polls every 5 ms: it runs once, at the engine's shutdown.
    func untilStopped(within bound: Duration) async {
        let end = ContinuousClock.now + bound
        while threads.running > 0, ContinuousClock.now < end {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// How long the engine's shutdown waits for its stopped conversions to return: 1 s.
    static let shutdownBound = Duration.seconds(1)

    /// A job's turn on the step's threads: converted on one, or ended without a conversion.
    private func take(_ job: Job, _ turn: WorkerThreads.Turn) {
        switch turn {
        case .run:
            work(job)
        case .withdrawn:
            root.remove(job.media)
            _ = job.completion(.failure(stopped(job)))
        case .dropped:
            root.remove(job.media)
            _ = job.completion(.failure(FetchFailure(.cancelled, "the engine is shutting down")))
        }
    }

    /// One job, on a step thread, stoppable by `stop()` while it runs (its signal goes with it to the threads).
    private func work(_ job: Job) {
        var outcome = run(job)
        if case .success(let result) = outcome {
            if result.path == job.media.path {
                // Attached as fetched; when the payload was answered without it, nobody will.
                if !job.completion(outcome) { root.remove(job.media) }
                return
            }
            // A converter that finished after its deadline despite the stop: too late to be attached.
            if let ended = ended(job) {
                root.remove(result)
                outcome = .failure(
                    FetchFailure(
                        ended.code, "the image was transformed only after the deadline (the converter did not stop)"))
            }
        }
        root.remove(job.media)
        if !job.completion(outcome), case .success(let result) = outcome { root.remove(result) }
    }

    /// One job, on a step thread: the plan from the header, then the conversion(s).
    private func run(_ job: Job) -> Result<FetchedMedia, FetchFailure> {
        let media = job.media
        if let ended = ended(job) { return .failure(ended) }
        if case .android(let variant) = job.target, let filtered = filtered(job, variant) { return filtered }
        let header: ImageHeader
        if media.type.isAttachable, let size = media.dimensions,
            !Plan(job, header: ImageHeader(size: size), settings: settings, imageBytes: imageBytes).isNeeded
        {
            // A JPEG or PNG whose first bytes gave its size, here for its verifying decode alone (which names its
            // type's decoder itself): no probe.
            header = ImageHeader(size: size)
        } else {
            do {
                // Read only as what libmagic decided the bytes are.
                header = try converter.header(of: media.path, type: media.type)
            } catch {
                return .failure(FetchFailure(error.code, error.detail))
            }
        }
        if let decoder = header.decoder, decoder != media.type {
            return .failure(
                FetchFailure(
                    .transformFailed,
                    "the converter read the \(media.type.mime) as \(decoder.mime); it is read only as what its bytes "
                        + "are"
                ))
        }
        if let refusal = pixelRefusal(header) { return .failure(refusal) }
        if let refusal = codedPixelRefusal(media, header: header) { return .failure(refusal) }
        var damage = media.damage
        // A verifying decode of an image whose structure is damaged would say what is known already; an Android
        // variant's source was checked for iOS (the same bytes, or the converter's output of them).
        if case .ios = job.target, settings.verifyImages, Self.verified.contains(media.type), damage == nil {
            switch verdict(job) {
            case .success(let found): damage = found
            case .failure(let refusal): return .failure(refusal)
            }
        }
        return planned(job, header: header).map { attached in
            var attached = attached
            attached.damage = damage
            return attached
        }
    }

    /// The types a verifying decode checks: those iOS attaches as fetched, whose headers alone were judged.
    static let verified: [MediaType] = [.jpeg, .png, .gif]

    /// The verdicts of verifying decodes, by SHA-256: nil when the image decodes whole, else why not. A campaign
    /// pays one decode per image even where its result is not cached (a refusal is not); bounded, it starts over
    /// when full.
    private let verdicts = LockedValue([String: String?]())
    static let maximumVerdicts = 10_000

    /// Whether `job`'s image decodes whole: nil when it does; else, for a JPEG or a GIF, why not (a phone shows
    /// what decodes, the rest grey or empty: it is attached with a `damaged-image` problem), and for a PNG the
    /// refusal (a phone shows nothing of it).
    private func verdict(_ job: Job) -> Result<String?, FetchFailure> {
        let media = job.media
        let damage: String?
        if let known = verdicts.withLock({ $0[media.sha256] }) {
            damage = known
        } else {
            switch decodes(job) {
            case .success(let found): damage = found
            case .failure(let failure): return .failure(failure)
            }
            verdicts.withLock { verdicts in
                if verdicts.count >= Self.maximumVerdicts { verdicts.removeAll() }
                verdicts[media.sha256] = .some(damage)
            }
        }
        guard let damage, media.type == .png else { return .success(damage) }
        return .failure(
            FetchFailure(.damagedImage, "\(damage); a phone shows nothing of a PNG that does not decode whole"))
    }

    /// One verifying decode: nil when the image decodes whole, else why not.
    private func decodes(_ job: Job) -> Result<String?, FetchFailure> {
        var request = VerificationRequest(path: job.media.path, type: job.media.type)
        if job.media.type == .png {
            // Its structure and CRCs first, without a decoder; then the picture chunks alone are decoded.
            do {
                request.bytes = try PNGChunks(
                    InputReader.read(job.media.path, limit: settings.maximumSourceBytes).get()
                ).stripped()
            } catch let damage as PNGChunks.Damage {
                return .success(damage.detail)
            } catch {
                return .failure(FetchFailure(.storeFailed, "cannot read the fetched image: \(error)"))
            }
        }
        do {
            try converter.verify(request, stop: job.stop)
            return .success(nil)
        } catch {
            if let ended = ended(job) { return .failure(ended) }
            guard error.code == .damagedImage else { return .failure(FetchFailure(error.code, error.detail)) }
            return .success("the image does not decode whole: \(error.detail)")
        }
    }

    /// What `job`'s image needs, done: itself when nothing, else a new attachment.
    private func planned(_ job: Job, header: ImageHeader) -> Result<FetchedMedia, FetchFailure> {
        let media = job.media
        let plan = Plan(job, header: header, settings: settings, imageBytes: imageBytes)
        guard plan.isNeeded else { return .success(media) }
        if media.type == .png {
            // iOS keeps an APNG's frames when only its metadata goes (an Android variant's PNG filter was tried
            // before the header was read).
            if case .ios = job.target, plan.format == .png, plan.maximumSide == nil, media.bytes <= imageBytes {
                return filterChunks(job, header: header)
            }
            // libvips reads an APNG's default image alone: what is attached is still, and says so.
            if PNGChunks.isAnimated(head: head(of: media.path)) {
                return convert(job, plan: plan, header: header, steps: [.firstFrame])
            }
        }
        // An Android variant of an animation is its first frame (read alone: `plan.animated` is false).
        if case .android = job.target, header.pages > 1 {
            return convert(job, plan: plan, header: header, steps: [.firstFrame])
        }
        return convert(job, plan: plan, header: header)
    }

    /// The first bytes of a file (64 KiB: APNG's acTL comes before the first IDAT, after IHDR), or none.
    private func head(of path: String) -> [UInt8] {
        var head: [UInt8] = []
        _ = FileSystem.readChunks(path) { chunk in
            head += chunk.prefix(65_536 - head.count)
            return head.count < 65_536
        }
        return head
    }

    /// An Android variant made without the converter, when its source's only fault is its metadata: a JPEG or PNG
    /// whose first bytes gave its size within the bound, within FCM's limit, still, with no EXIF orientation to
    /// apply (Android ignores it) has its metadata segments or chunks filtered out (`JPEGSegments`, `PNGChunks`), no
    /// pixel re-encoded and no image library loaded. Nil when that is not so (or the filter cannot follow the file):
    /// the variant is then converted.
    private func filtered(_ job: Job, _ variant: AndroidVariant) -> Result<FetchedMedia, FetchFailure>? {
        let media = job.media
        guard media.type == .jpeg || media.type == .png, let size = media.dimensions,
            max(size.width, size.height) <= variant.maximumDimension, media.bytes <= AndroidVariant.maximumBytes,
            let bytes = try? InputReader.read(media.path, limit: AndroidVariant.maximumBytes).get(),
            let metadata = ImageMetadata.read(bytes, type: media.type), !metadata.animated,
            metadata.orientation ?? 1 == 1
        else { return nil }
        let header = ImageHeader(size: size)
        // A PNG whose kept chunks the filter refuses (an ancillary chunk's CRC, which libpng only warns about and
        // the structure walk does not check) is left to the converter, as a JPEG it cannot follow is.
        let stripped = media.type == .png ? (try? PNGChunks(bytes))?.stripped() : JPEGSegments.stripped(bytes)
        guard let stripped else { return nil }
        return written(job, header: header, format: media.type, stripped)
    }

    /// A PNG whose only need is losing its metadata: its chunks filtered (`PNGChunks`), nothing decoded, every
    /// frame of an APNG kept.
    private func filterChunks(_ job: Job, header: ImageHeader) -> Result<FetchedMedia, FetchFailure> {
        let png: PNGChunks
        do {
            let bytes = try InputReader.read(job.media.path, limit: imageBytes).get()
            png = try PNGChunks(bytes)
        } catch let damage as PNGChunks.Damage {
            return .failure(FetchFailure(.damagedImage, damage.detail))
        } catch {
            return .failure(FetchFailure(.storeFailed, "cannot read the fetched image: \(error)"))
        }
        return written(job, header: header, format: .png, png.stripped())
    }

    /// `bytes`, the source without its metadata, written as a new attachment of `format` (the `metadata-stripped`
    /// step).
    private func written(
        _ job: Job, header: ImageHeader, format: MediaType, _ stripped: [UInt8]
    ) -> Result<FetchedMedia, FetchFailure> {
        write(job, format: format) { partial throws(FetchFailure) in
            let written = stripped.withUnsafeBytes { bytes in
                Result { () throws(StoreError) in try partial.write(bytes) }
            }
            if case .failure(let error) = written { throw FetchFailure(.storeFailed, error.detail) }
            return ImageSize(width: header.width, height: header.height)
        }.map { written in
            var media = written.media
            media.dimensions = written.size
            media.transformation = Self.transformation(of: job.media, steps: [.metadataStripped])
            return media
        }
    }

    /// The record of a transformation of `media` that took `steps`: when `media` is itself a transformation's
    /// output (an Android variant made from what iOS attaches), its steps are counted too and its original stays
    /// the original, what was fetched.
    static func transformation(of media: FetchedMedia, steps: [Transformation.Step]) -> Transformation {
        let previous = media.transformation
        let done = Set(steps + (previous?.steps ?? []))
        return Transformation(
            steps: Transformation.Step.allCases.filter(done.contains),
            original: previous?.original
                ?? Transformation.Original(type: media.type, bytes: media.bytes, sha256: media.sha256))
    }

    /// The refusal of an image whose header declares more pixels than allowed (or none), else nil.
    private func pixelRefusal(_ header: ImageHeader) -> FetchFailure? {
        if header.width <= 0 || header.height <= 0 {
            return FetchFailure(
                .damagedImage, "the header declares \(header.width) x \(header.height) pixels: there is no picture")
        }
        return pixelRefusal(declared: header)
    }

    /// The refusal (`too-many-pixels`) of a HEIC or AVIF whose coded frames decoded for its primary image
    /// (`HEIFCodedFrames`: their own sequence headers, not the `ispe` property the header is read from) hold more
    /// pixels than `maximumPixels` and an eighth (a grid's tiles reach past the picture's edges: an iPhone's 48 MP
    /// photo is 50.3 MP of 512 x 512 tiles), or whose boxes say more work than is read or not what its decoder would
    /// decode (`HEIFCodedFrames.Refusal`: it fails closed), else nil; nil for every other type.
    func codedPixelRefusal(_ media: FetchedMedia, header: ImageHeader) -> FetchFailure? {
        guard Self.codedTypes.contains(media.type) else { return nil }
        guard case .success(let bytes) = InputReader.read(media.path, limit: max(media.bytes, 1)) else {
            return FetchFailure(.transformFailed, "the \(media.type.mime) could not be read again for its frames")
        }
        return codedPixelRefusal(HEIFCodedFrames.read(bytes), type: media.type, declared: header)
    }

    /// The refusal `codedPixelRefusal(_:header:)` makes, as far as a probe's first bytes show it (`coded`, read from
    /// them with `prefix`; `explain`, which has no header: the primary item's `ispe` is named instead): a refusal for
    /// more work than is read, or for frames whose sequence headers are in them; nil where what it needs lies past
    /// them (a `meta` box longer than they are, an AV1 sequence header in item data further on), which cannot be told
    /// from a file its decoder would not read.
    func codedPixelRefusal(firstBytes coded: HEIFCodedFrames, type: MediaType) -> FetchFailure? {
        if case .unreadable = coded.refusal { return nil }
        return codedPixelRefusal(coded, type: type, declared: coded.declared.map { ImageHeader(size: $0) })
    }

    /// The types whose coded frames are counted: HEIC and AVIF.
    static let codedTypes: Set<MediaType> = [.heic, .avif]

    /// The refusal of a HEIF of `type` whose frames are `coded`, its header declaring `header` (nil when unknown).
    private func codedPixelRefusal(_ coded: HEIFCodedFrames, type: MediaType, declared header: ImageHeader?)
        -> FetchFailure?
    {
        switch coded.refusal {
        case .unbounded(let reason):
            return FetchFailure(.tooManyPixels, "the \(type.mime) has \(reason): not decoded")
        case .unreadable(let reason):
            return FetchFailure(
                .transformFailed,
                "the \(type.mime)'s boxes do not say what its decoder would decode (\(reason)): not decoded")
        case nil: break
        }
        guard let largest = coded.frames.max(by: { $0.pixels < $1.pixels }) else { return nil }
        let maximum = settings.maximumPixels
        let (allowed, overflow) = maximum.addingReportingOverflow(maximum / 8)
        guard !overflow, coded.pixels > allowed else { return nil }
        let frames = coded.frames.count == 1 ? "its coded frame" : "its \(coded.frames.count) coded frames"
        let source = largest.fromProperty ? "its ispe property" : "its \(largest.codec) sequence header"
        let declared = header.map { " where its header declares \($0.width) x \($0.height)" } ?? ""
        return FetchFailure(
            .tooManyPixels,
            "the \(type.mime) decodes \(coded.pixels) pixels in \(frames) (the largest: item \(largest.item), "
                + "\(largest.width) x \(largest.height) by \(source))\(declared); the limit is \(maximum) "
                + "(\(names["transform.maximumPixels"])), and an eighth more for a grid's tiles")
    }

    /// The refusal (`too-many-pixels`) of an image whose structure declares more pixels than allowed, all frames
    /// together (`MediaStructure.declared`: a GIF's logical screen, an APNG's canvas, each times its frames), else
    /// nil. Checked beside the header's count, which libvips makes without either. A side of 0 is no refusal here
    /// (libnsgif sizes such a GIF's canvas from its frames); the header's own check judges the picture.
    func pixelRefusal(declared: ImageHeader) -> FetchFailure? {
        settings.pixelRefusal(width: declared.width, height: declared.height, pages: declared.pages, names: names)
    }

    /// Why a job that was stopped ended: `ended(job)`, which a stopped job always has.
    private func stopped(_ job: Job) -> FetchFailure {
        ended(job) ?? FetchFailure(.cancelled, "cancelled before the image was transformed")
    }

    /// Why the job must not go on (its deadline came, or its caller gave up), or nil.
    private func ended(_ job: Job) -> FetchFailure? {
        guard job.stop.isStopped || ContinuousClock.now >= job.deadline else { return nil }
        if ContinuousClock.now >= job.deadline - .milliseconds(2) {
            return FetchFailure(.expired, "the deadline came before the image was transformed")
        }
        return FetchFailure(.cancelled, "cancelled before the image was transformed")
    }

    /// What a fetched image needs, decided from its type, size and header, and whom it is for.
    struct Plan {
        var format: MediaType
        var maximumSide: Int?
        var animated: Bool
        var isNeeded: Bool
        /// The most bytes the output may have, and its name in a refusal.
        var cap: Int
        var capName = "the image cap"

        init(_ job: Job, header: ImageHeader, settings: TransformSettings, imageBytes: Int) {
            self.init(media: job.media, header: header, settings: settings, imageBytes: imageBytes, target: job.target)
        }

        init(
            media: FetchedMedia, header: ImageHeader, settings: TransformSettings, imageBytes: Int,
            target: Target = .ios
        ) {
            cap = imageBytes
            if case .android(let variant) = target {
                // Always a still JPEG or PNG, written anew: `AndroidVariant` kept what needed nothing.
                animated = false
                format = header.hasAlpha ? .png : .jpeg
                maximumSide = header.longestSide > variant.maximumDimension ? variant.maximumDimension : nil
                cap = AndroidVariant.maximumBytes
                capName = "FCM's Android limit"
                isNeeded = true
                return
            }
            animated = header.pages > 1 && ImageHeader.animatedTypes.contains(media.type)
            if media.type.isAttachable {
                format = media.type
            } else if animated {
                format = .gif
            } else {
                format = header.hasAlpha ? .png : .jpeg
            }
            if let bound = settings.maximumDimension, header.longestSide > bound {
                maximumSide = bound
            }
            isNeeded =
                format != media.type || maximumSide != nil || media.bytes > imageBytes
                || (settings.stripMetadata && (media.type == .jpeg || media.type == .png))
        }
    }

    /// Converts until the output fits the image cap (each attempt smaller), into a new attachment.
    private func convert(
        _ job: Job, plan: Plan, header: ImageHeader, steps: [Transformation.Step] = []
    ) -> Result<FetchedMedia, FetchFailure> {
        var plan = plan
        var steps = steps
        for attempt in 1...Self.maximumAttempts {
            if let ended = ended(job) { return .failure(ended) }
            let written: Written
            switch write(job, plan) {
            case .success(let output):
                written = output
            case .failure(let failure):
                // An animation that cannot be written as a GIF is attached as its first frame.
                guard plan.animated, failure.code == .transformFailed, !job.stop.isStopped else {
                    return .failure(failure)
                }
                plan.animated = false
                plan.format = header.hasAlpha ? .png : .jpeg
                steps = [.firstFrame]
                continue
            }
            guard written.media.bytes > plan.cap else {
                var media = written.media
                media.dimensions = written.size
                var done: [Transformation.Step] = []
                if plan.format != job.media.type { done.append(.transcoded) }
                // Compared by the longest side: turning a photo upright swaps its width and height.
                if max(written.size.width, written.size.height) < header.longestSide { done.append(.downscaled) }
                done.append(.metadataStripped)
                media.transformation = Self.transformation(of: job.media, steps: done + steps)
                return .success(media)
            }
            root.remove(written.media)
            guard attempt < Self.maximumAttempts else {
                return .failure(
                    FetchFailure(
                        .transformFailed,
                        "still \(written.media.bytes) bytes at \(written.size.width) x \(written.size.height) after "
                            + "\(attempt) re-encodes; \(plan.capName) is \(plan.cap)"
                    ))
            }
            // Bytes go roughly with the area: shrink the sides by the square root of the excess, and a margin.
            let longest = max(written.size.width, written.size.height)
            let scale = (Double(plan.cap) / Double(written.media.bytes)).squareRoot() * 0.85
            plan.maximumSide = max(16, Int(Double(longest) * scale))
        }
        return .failure(FetchFailure(.transformFailed, "no attempt was made"))
    }

    private struct Written {
        var media: FetchedMedia
        var size: ImageSize
    }

    /// One conversion into a new attachment directory.
    private func write(_ job: Job, _ plan: Plan) -> Result<Written, FetchFailure> {
        write(job, format: plan.format) { partial throws(FetchFailure) in
            let request = ConversionRequest(
                input: job.media.path, type: job.media.type, output: ImageOutput(partial), format: plan.format,
                maximumSide: plan.maximumSide, quality: settings.jpegQuality, animated: plan.animated)
            do throws(TransformFailure) {
                if job.media.type == .svg, let renderer {
                    return try renderer.convert(request, stop: job.stop, deadline: job.deadline)
                }
                return try converter.convert(request, stop: job.stop)
            } catch {
                throw FetchFailure(error.code, error.detail)
            }
        }
    }

    /// A new attachment of `format` that `fill` writes: written, checked, committed, hashed.
    private func write(
        _ job: Job, format: MediaType, _ fill: (PartialAttachment) throws(FetchFailure) -> ImageSize
    ) -> Result<Written, FetchFailure> {
        let partial: PartialAttachment
        do {
            partial = try root.begin()
        } catch {
            return .failure(FetchFailure(.storeFailed, error.detail))
        }
        let size: ImageSize
        job.output.withLock { $0 = partial.abandonment }
        defer { job.output.withLock { $0 = nil } }
        do {
            size = try fill(partial)
        } catch {
            partial.discard()
            if let ended = ended(job) { return .failure(ended) }
            return .failure(error)
        }
        let path: String
        do {
            path = try partial.commit(fileExtension: format.fileExtension)
        } catch {
            return .failure(FetchFailure(.storeFailed, error.detail))
        }
        let digest: FileDigest
        switch FileDigest.of(path) {
        case .success(let read):
            digest = read
        case .failure(let error):
            root.remove(directory: partial.directory, path: path)
            return .failure(FetchFailure(.storeFailed, error.detail))
        }
        guard Self.signature(of: format).contains(where: { digest.head.starts(with: $0) }) else {
            root.remove(directory: partial.directory, path: path)
            return .failure(FetchFailure(.transformFailed, "the converter wrote something that is not \(format.mime)"))
        }
        var media = FetchedMedia(
            path: path, directory: partial.directory, type: format, bytes: digest.bytes, sha256: digest.sha256,
            validators: job.media.validators)
        media.identity = partial.identity
        return .success(Written(media: media, size: size))
    }

    /// The first bytes a file of `type` starts with (any of them).
    static func signature(of type: MediaType) -> [[UInt8]] {
        switch type {
        case .jpeg: return [[0xFF, 0xD8, 0xFF]]
        case .png: return [[0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]]
        case .gif: return [Array("GIF87a".utf8), Array("GIF89a".utf8)]
        default: return []
        }
    }
}
