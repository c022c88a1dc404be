/// The engine: finds every media reference in a payload, fetches each under the payload's deadline, and
/// returns the mutated content with its attachments, or the best attempt so far when the deadline comes.
///
/// One `Enricher` serves many payloads at once through one fetch loop. Call `await shutdown()` when done: it
/// drains (no new payload is taken, the ones in flight finish by their own deadlines, then what remains is
/// cancelled). Or hand it to whatever runs your services: `run()` returns when it has shut down, and drains when
/// its task is cancelled. An enricher dropped without a shutdown still removes its media cache's links.
public final class Enricher: LifecycleService {
    /// The configuration it was made with.
    public let configuration: Enricher.Configuration
    let fetcher: Fetcher
    let cache: MediaCache?
    /// Android variants made, by their source's SHA-256 (`Enricher+Android.swift`): with a converter and the media
    /// cache.
    let variants: MediaCache?
    /// Admission: every payload (and `explain`, and the extension's runs) enters it; shutdown closes it.
    let gate = WorkGate()
    /// The shutdown under way, once one began; every `shutdown()` and `run()` awaits the same one.
    private let stopping = LockedValue<Task<Void, Never>?>(nil)
    /// Set once a shutdown has finished (the loop stopped, the cache's links removed).
    private let stopped = LockedValue(false)
    /// The work that runs in tasks of its own, so that the drain's deadline can cut it as it cuts the transfers:
    /// the publications (a publisher stops when its task is cancelled) and the waits before a retry (which waited
    /// out an origin's `Retry-After`, up to the payload's deadline, past any drain); `cut` once it has.
    private let work = LockedValue(CuttableWork())

    private struct CuttableWork {
        var next = 0
        var cancels: [Int: @Sendable () -> Void] = [:]
        var cut = false
    }

    /// Where an enricher is in its life.
    public enum State: Sendable, Hashable {
        /// Taking payloads.
        case running
        /// A shutdown has begun: no payload is taken (`enrich` returns `cancelled` at once); the ones in flight
        /// are draining, or being cancelled.
        case shuttingDown
        /// Shut down: the fetch loop has stopped and the media cache's links are removed.
        case stopped
    }

    /// Where this enricher is in its life, for a host that must know whether to route work to it (a readiness
    /// check, a load balancer's health route): `running` until a shutdown begins, then `shuttingDown`, then
    /// `stopped` once that shutdown has finished.
    public var state: State {
        if stopped.withLock({ $0 }) { return .stopped }
        return gate.isOpen ? .running : .shuttingDown
    }

    /// An enricher with this configuration.
    /// - Throws: `ConfigurationError` naming the first wrong field (nothing is started); `FetcherError` when
    ///   libmagic's database cannot be loaded or the attachments root is refused.
    public convenience init(configuration: Enricher.Configuration = Enricher.Configuration()) throws {
        // Validated by the fetcher, before it opens anything.
        self.init(configuration: configuration, fetcher: try Fetcher(configuration: configuration))
    }

    /// An enricher over `fetcher`, with its own media cache and variant cache.
    private init(configuration: Enricher.Configuration, fetcher: Fetcher) {
        self.configuration = configuration
        self.fetcher = fetcher
        self.cache =
            configuration.cache.enabled
            ? MediaCache(
                source: fetcher, root: fetcher.root, spares: fetcher.spares, statistics: fetcher.statistics,
                settings: configuration.cache)
            : nil
        self.variants = Self.variantCache(configuration, fetcher: fetcher)
    }

    /// An enricher with its own configuration that runs its transfers on `base`'s fetch loop (one thread and one
    /// curl multi handle for every tenant of a service): a tenant's engine. What it shares with `base`: the loop and
    /// its connection bounds, the digests' thread, the attachments root (`configuration.store` must be `base`'s)
    /// and the statistics. What is its own: the network policy and limits each of its transfers follows (judged
    /// where sockets open and before any kept connection carries a request), the transformation, publishing, retries,
    /// conventions, and the media cache and its single flight, so that no download made under one enricher's policy
    /// is ever handed to another's payloads. A configuration pinning other names than `base`'s (`network.resolve`)
    /// gets a loop of its own instead: curl's DNS cache, where pinned names go, belongs to the multi handle.
    ///
    /// Its `shutdown()` drains its own payloads and removes its cache's links; it leaves the loop running (its
    /// payloads still fetching after the drain deadline then end by their own deadlines, or when `base` shuts down).
    /// - Throws: `ConfigurationError` naming the first wrong field; `FetcherError` as `init(configuration:)`.
    package convenience init(configuration: Enricher.Configuration, sharingLoopOf base: Enricher) throws {
        try configuration.validate()
        guard configuration.store.root == base.configuration.store.root else {
            throw ConfigurationError(
                field: "store.root", code: .malformed,
                detail: "an enricher sharing a fetch loop stores under its root, '\(base.configuration.store.root)'")
        }
        let fetcher =
            configuration.network.resolve == base.configuration.network.resolve
            ? Fetcher(
                sharing: base.fetcher, network: configuration.network, limits: configuration.limits,
                transform: configuration.transform, names: configuration.settingNames)
            : try Fetcher(configuration: configuration)
        self.init(configuration: configuration, fetcher: fetcher)
    }

    /// Processes one payload, finishing by `deadline` (a deadline more than a day away, `Duration.furthestDeadline`,
    /// is taken as a day away).
    ///
    /// Returns when every reference has settled, or at the deadline with what finished (outcome `expired`;
    /// transfers still running are cancelled and their partial files removed first). Cancelling the calling
    /// task ends it the same way, with outcome `cancelled`. Once shutdown has begun, returns at once with outcome
    /// `cancelled` and fetches nothing.
    public func enrich(_ payload: PushPayload, deadline: ContinuousClock.Instant) async -> EnrichmentResult {
        finished(await result(of: payload, deadline: deadline))
    }

    /// `enrich(_:deadline:)` without its log event.
    private func result(of payload: PushPayload, deadline: ContinuousClock.Instant) async -> EnrichmentResult {
        let run = EnrichmentRun(payload: payload, configuration: configuration)
        guard gate.enter() else { return run.refused() }
        defer { gate.leave() }
        await process(run, deadline: deadline)
        return run.close()
    }

    /// Reports a result about to be handed back (`payload-finished`, at `debug`) and returns it.
    func finished(_ result: EnrichmentResult) -> EnrichmentResult {
        log(.payloadFinished) {
            var metadata = [
                "outcome": result.outcome.rawValue, "elapsed_ms": String(result.elapsed.inMilliseconds),
                "attachments": String(result.attachments.count),
                "problems": String(result.problems.count),
            ]
            metadata["input"] = result.input
            return (
                "\(result.input ?? "payload") \(result.outcome.rawValue) in \(metadata["elapsed_ms"]!) ms", metadata
            )
        }
        return result
    }

    /// Processes one payload within `timeout` from now (default: the configured `timeout`).
    public func enrich(_ payload: PushPayload, timeout: Duration? = nil) async -> EnrichmentResult {
        await enrich(payload, deadline: .now + (timeout ?? configuration.timeout))
    }

    /// Parses a payload under this enricher's limits (`configuration.limits.payload`): the one parse behind every
    /// entry point (`enrich(json:source:deadline:)`, the service, `explain`), so that the same bytes are accepted
    /// or refused alike whichever way they come in. `PushPayload(parsing:)` alone applies the default limits,
    /// whatever the configuration says.
    /// - Throws: `PayloadError`: `payload-too-large`, `too-deep`, `invalid-utf8`, `not-json`, `not-object`.
    public func payload(parsing bytes: some Collection<UInt8>) throws(PayloadError) -> PushPayload {
        try PushPayload(parsing: bytes, limits: configuration.limits.payload)
    }

    /// Parses (`payload(parsing:)`) and processes one input; an input that is not a payload gives an `invalid`
    /// result.
    /// - Parameter source: the input's name, used as the problem's source when it is invalid.
    public func enrich(
        json bytes: some Collection<UInt8>, source: String, deadline: ContinuousClock.Instant
    ) async -> EnrichmentResult {
        let start = ContinuousClock.now
        do {
            let payload = try self.payload(parsing: bytes)
            var result = await result(of: payload, deadline: deadline)
            result.input = source
            return finished(result)
        } catch {
            var result = EnrichmentResult.invalid(error, source: source, elapsed: .now - start)
            result.input = source
            return finished(result)
        }
    }

    /// Fetches every reference of `run` concurrently, recording each outcome as it settles. A payload with one
    /// reference (most of them) fetches it in the calling task: a child task for it cost a task's creation and
    /// scheduling per payload (bench (b) on a tmpfs, ten alternated runs: 0.325 s of CPU against 0.345 s).
    func process(_ run: EnrichmentRun, deadline: ContinuousClock.Instant) async {
        let deadline = deadline.withinFurthest
        if run.references.count == 1 {
            await settle(run, 0, deadline: deadline)
            return
        }
        await withTaskGroup(of: Void.self) { group in
            for index in run.references.indices {
                group.addTask { await self.settle(run, index, deadline: deadline) }
            }
        }
    }

    /// Fetches one reference of `run` (through the cache, with retries, then published) and records how it ended.
    /// When it fails and the reference has a fallback (Swrve's `fallback_url`), the fallback is fetched the same way,
    /// by the same deadline, unless the failure was the deadline or a cancellation.
    ///
    /// It reads the reference's fields in `run` where it needs them rather than taking a copy of it: a copy held
    /// across the fetch was a retain and a release of each of its strings, per payload.
    private func settle(_ run: EnrichmentRun, _ index: Int, deadline: ContinuousClock.Instant) async {
        var url = run.references[index].url
        var result = await fetch(url, for: run, index, deadline: deadline)
        var primaryFailure: FetchFailure?
        if case .failure(let failure) = result, failure.code != .expired, failure.code != .cancelled,
            let fallback = run.references[index].fallback?.url
        {
            primaryFailure = failure
            url = fallback
            result = await fetch(fallback, for: run, index, deadline: deadline)
        }
        if run.references[index].platform == .android, case .success(let media) = result {
            result = await androidVariant(of: media, url: url, deadline: deadline)
        }
        if let publisher = configuration.publisher, case .success(var media) = result {
            switch await publish(media, with: publisher, deadline: deadline) {
            case nil:
                // Cut by the drain's deadline: the payload ends `cancelled`, as one whose transfer was cut.
                fetcher.root.remove(media)
                result = .failure(
                    FetchFailure(.cancelled, "the drain's deadline came while it was being published (shutdown)"))
            case .success(let url)?:
                media.publication = .published(url)
                result = .success(media)
            case .failure(let failure)?:
                media.publication = .failed(failure.detail)
                log(.publishFailed) {
                    let url = run.references[index].url
                    return (
                        "\(url): not published: \(failure.detail)",
                        ["url": url, "detail": failure.detail, "code": failure.code ?? "other"]
                    )
                }
                result = .success(media)
            }
        }
        if case .success(let media)? = run.record(index, result, primaryFailure: primaryFailure) {
            // The run was closed (its result handed over) before this finished: no result names the file, so
            // it goes now rather than being left to `gc`.
            fetcher.root.remove(media)
        }
    }

    /// Publishes `media` by `deadline` in a task of its own, which the caller's cancellation cancels too; nil when
    /// the drain's deadline cut it (or had passed).
    private func publish(
        _ media: FetchedMedia, with publisher: any MediaPublisher, deadline: ContinuousClock.Instant
    ) async -> Result<String, PublishFailure>? {
        let (outcome, cut) = await cuttable { await publisher.published(media, deadline: deadline) }
        if cut, case .failure = outcome { return nil }
        return outcome
    }

    /// Runs `operation` in a task of its own, cancelled when the calling task is and when the drain's deadline comes
    /// (`cutWork`; at once when it has come); with whether it had come when the operation ended.
    private func cuttable<Value: Sendable>(
        _ operation: @escaping @Sendable () async -> Value
    ) async -> (value: Value, cut: Bool) {
        let task = Task { await operation() }
        let id = work.withLock { work -> Int? in
            guard !work.cut else { return nil }
            work.next += 1
            work.cancels[work.next] = { task.cancel() }
            return work.next
        }
        if id == nil { task.cancel() }
        let value = await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            task.cancel()
        }
        let cut = work.withLock { work in
            if let id { work.cancels[id] = nil }
            return work.cut
        }
        return (value, cut)
    }

    /// Cancels every publication and wait before a retry in flight, and any started later: the drain's deadline has
    /// come.
    private func cutWork() {
        let cancels = work.withLock { work in
            work.cut = true
            return Array(work.cancels.values)
        }
        for cancel in cancels { cancel() }
    }

    /// Fetches `url` for reference `index` of `run`, through the cache, with retries.
    private func fetch(
        _ url: String, for run: EnrichmentRun, _ index: Int, deadline: ContinuousClock.Instant
    ) async -> Result<FetchedMedia, FetchFailure> {
        let (result, _) = await configuration.retry.run(
            url: url, deadline: deadline, attempting: { run.attempting(index, $0) },
            retrying: { failure, attempt, wait in
                self.log(.retry) {
                    (
                        "\(url): attempt \(attempt) failed (\(failure.code.rawValue)), retrying in "
                            + "\(wait.inMilliseconds) ms",
                        [
                            "url": url, "attempt": String(attempt), "code": failure.code.rawValue,
                            "detail": failure.detail, "delay_ms": String(wait.inMilliseconds),
                        ]
                    )
                }
            },
            // Waited in a task the drain's deadline cuts: the caller's task is not the engine's to cancel.
            sleep: { wait in
                guard await self.cuttable({ (try? await Task.sleep(for: wait)) != nil }).value else {
                    throw CancellationError()
                }
            }
        ) {
            guard let cache = self.cache else {
                return await self.fetcher.fetch(url, deadline: deadline)
            }
            return await cache.attachment(for: url, deadline: deadline)
        }
        return result
    }

    /// How many images are being transformed now (tests).
    var transformsRunning: Int { fetcher.transformsRunning }

    /// How many images wait to be transformed now (tests).
    var transformsWaiting: Int { fetcher.transformsWaiting }

    /// The process ids of the SVG renderer's children running now (tests).
    var svgRenderers: [Int32] { fetcher.svgRenderers }

    /// What this engine has done so far (cache hits, misses and revalidations, bytes fetched), as a snapshot: the
    /// counts the service's `/metrics` exposes, for a host with metrics of its own. Read it as often as wanted (one
    /// lock, no I/O); changing the copy changes nothing in the engine.
    public var statistics: EngineStatistics {
        var statistics = fetcher.statistics.snapshot
        statistics.publishing = configuration.publisher?.statistics
        return statistics
    }

    /// Fetches only the headers and first bytes of `url` (see `Fetcher.probe`); `cancelled` once shutdown began.
    func probe(
        _ url: String, deadline: ContinuousClock.Instant
    ) async -> Result<Fetcher.Probed, FetchFailure> {
        guard gate.enter() else { return .failure(FetchFailure(.cancelled, "the engine is shutting down")) }
        defer { gate.leave() }
        return await fetcher.probe(url, deadline: deadline)
    }

    // MARK: - Lifecycle

    /// Shuts the enricher down gracefully, returning once it is done (no thread of the cooperative pool is held
    /// meanwhile): no payload is taken from the moment it is called (a later `enrich` returns `cancelled` at
    /// once); the payloads in flight finish by their own deadlines, or by `drainDeadline` when that comes first,
    /// and whatever remains then is cancelled (outcome `cancelled`); then the fetch loop stops and the media
    /// cache's links are removed. Attachments already handed out stay: they are the caller's.
    ///
    /// Calling it again, or from several tasks, waits for the same shutdown (the first call's drain deadline
    /// holds). Cancelling the calling task does not cut the drain short: pass a drain deadline for that.
    /// - Parameter drainDeadline: when to stop waiting for the payloads in flight; nil (the default) waits for
    ///   each one's own deadline.
    public func shutdown(drainDeadline: ContinuousClock.Instant? = nil) async {
        await beginShutdown(drainDeadline: drainDeadline).value
    }

    /// `shutdown(drainDeadline:)` with the drain bounded to `drainTimeout` from now.
    public func shutdown(drainTimeout: Duration) async {
        await shutdown(drainDeadline: .now + drainTimeout)
    }

    /// Runs until the enricher has shut down: returns once a `shutdown()` called elsewhere has completed. When
    /// the task running it is cancelled, it shuts the enricher down itself, draining as `shutdown()` does, and
    /// returns when that is done. Cancellation drains rather than aborts because the work is not this task's:
    /// each payload runs in its caller's task, and a caller that is cancelled ends its own payload (`cancelled`).
    /// This is the shape of swift-service-lifecycle's `Service.run()`; without that package, start it in a task and
    /// cancel the task (or call `shutdown()`) to stop.
    public func run() async throws {
        await gate.untilClosed()
        await shutdown()
    }

    /// Starts the shutdown once; every caller gets the same task. The task is unstructured so that a cancelled
    /// caller (a cancelled `run()`) still drains.
    private func beginShutdown(drainDeadline: ContinuousClock.Instant?) -> Task<Void, Never> {
        // A drain further off than a day (`.seconds(Int64.max)`) is a day: the clock's sleep takes 64-bit seconds.
        let drainDeadline = drainDeadline?.withinFurthest
        return stopping.withLock { stopping in
            if let stopping { return stopping }
            gate.close()
            let began = ContinuousClock.now
            log(.shutdownBegan) {
                let inFlight = gate.inside
                var metadata = ["in_flight": String(inFlight)]
                metadata["drain_ms"] = drainDeadline.map { String(max(.zero, $0 - began).inMilliseconds) }
                let drain = metadata["drain_ms"].map { "up to \($0) ms" } ?? "their own deadlines"
                return ("shutting down: \(inFlight) payloads in flight, given \(drain)", metadata)
            }
            let task = Task { [self, gate, fetcher, cache, variants, stopped] in
                let drained = await withTaskGroup(of: Bool.self) { group in
                    group.addTask {
                        await gate.untilIdle()
                        return true
                    }
                    if let drainDeadline {
                        group.addTask {
                            try? await Task.sleep(until: drainDeadline, clock: .continuous)
                            return false
                        }
                    }
                    // The first to end (drained, or the drain deadline) ends the wait; the other is cancelled.
                    defer { group.cancelAll() }
                    return await group.next() ?? true
                }
                // Cancels every transfer and publication still running: their payloads settle at once, `cancelled`.
                if !drained { self.cutWork() }
                await fetcher.shutdown()
                // Not cancelled (this task never is): waits until every payload has returned, so that no cache
                // link is made after the links are removed.
                await gate.untilIdle()
                cache?.removeAll()
                variants?.removeAll()
                stopped.withLock { $0 = true }
                self.log(.shutdownFinished) {
                    let elapsed = (ContinuousClock.now - began).inMilliseconds
                    return (
                        "shut down in \(elapsed) ms"
                            + (drained ? "" : ", the payloads left at the drain deadline cancelled"),
                        ["elapsed_ms": String(elapsed), "drained": String(drained)]
                    )
                }
            }
            stopping = task
            return task
        }
    }

    /// Shuts the enricher down from synchronous code, without draining: stops taking payloads, cancels the ones in
    /// flight (outcome `cancelled`), stops the fetch loop and removes the media cache's links, blocking the calling
    /// thread until the loop has stopped. Named apart from `shutdown()`, as async-http-client's `syncShutdown()`:
    /// as an overload of the same name it was the one `await enricher.shutdown()` picked at the top level of a
    /// `main.swift`, which then aborted where the line meant to drain.
    @available(*, noasync, message: "it blocks a thread of the cooperative pool; use 'await shutdown()'")
    public func syncShutdown() {
        let began = ContinuousClock.now
        let open = gate.close()
        if open {
            log(.shutdownBegan) {
                (
                    "shutting down at once: \(gate.inside) payloads in flight cancelled",
                    ["in_flight": String(gate.inside), "drain_ms": "0"]
                )
            }
        }
        cutWork()
        fetcher.syncShutdown()
        cache?.removeAll()
        variants?.removeAll()
        stopped.withLock { $0 = true }
        if open {
            log(.shutdownFinished) {
                let elapsed = (ContinuousClock.now - began).inMilliseconds
                return ("shut down in \(elapsed) ms", ["elapsed_ms": String(elapsed), "drained": "false"])
            }
        }
    }

    /// Removes the attachments of `result` that this enricher stored (each one's directory, `<root>/<uuid>/`):
    /// for when the caller has handed their bytes on, or will not use them. Paths outside this enricher's
    /// attachments root, or not shaped as it names them, are left alone. Returns how many were removed.
    @discardableResult
    public func removeAttachments(of result: EnrichmentResult) -> Int {
        result.attachments.filter { fetcher.root.remove($0.media) }.count
    }

    deinit {
        // Forgotten shutdown: the fetch loop stops with the fetcher; the cache's links must not stay behind.
        cache?.removeAll()
        variants?.removeAll()
    }
}
