/// The shape of iOS's `UNNotificationServiceExtension`, for code ported from an app: `didReceive` starts the
/// work, the content handler is called once with the result, and `serviceExtensionTimeWillExpire` hands over
/// the best attempt so far at once.
///
/// The content handler is called exactly once per `didReceive`, whichever comes first: completion, the
/// deadline, or `serviceExtensionTimeWillExpire()`. The result handed over closes the run: a transfer that
/// finishes after it has its file removed, so every stored file is named by the result that was delivered.
public final class MediaServiceExtension: Sendable {
    private let enricher: Enricher
    private let current = LockedValue<Delivery?>(nil)

    /// An extension on this engine.
    public init(enricher: Enricher) {
        self.enricher = enricher
    }

    /// Starts processing `payload`; `contentHandler` receives the result once. A second call while one is in
    /// progress expires the first (as iOS would start a new extension instance). Once the enricher is shutting
    /// down, the handler is called at once with outcome `cancelled`.
    public func didReceive(
        _ payload: PushPayload, deadline: ContinuousClock.Instant? = nil,
        withContentHandler contentHandler: @escaping @Sendable (EnrichmentResult) -> Void
    ) {
        let run = EnrichmentRun(payload: payload, configuration: enricher.configuration)
        guard enricher.gate.enter() else {
            contentHandler(enricher.finished(run.refused()))
            return
        }
        let deadline = deadline ?? .now + enricher.configuration.timeout
        let delivery = Delivery(run: run, handler: { [enricher] in contentHandler(enricher.finished($0)) })
        // The task exists before the delivery is published: an expiry that finds this delivery always finds a
        // task to cancel (before, an expiry between the two left the work running to completion, unseen).
        delivery.task = Task { [enricher] in
            defer { enricher.gate.leave() }
            await enricher.process(run, deadline: deadline)
            delivery.finish(expired: false)
        }
        // One lock for the swap: of two calls at once, each expires exactly what it replaced.
        let previous = current.withLock { current in
            defer { current = delivery }
            return current
        }
        previous?.finish(expired: true)
    }

    /// Delivers the best attempt so far now (outcome `expired` unless everything had finished), and cancels
    /// the transfers still running; one that finishes anyway has its file removed.
    public func serviceExtensionTimeWillExpire() {
        current.withLock { $0 }?.finish(expired: true)
    }

    /// Waits until the work of the current delivery has ended (its transfers settled, late files removed). For tests.
    func settle() async {
        await current.withLock { $0 }?.task?.value
    }
}

/// One `didReceive`: its handler, called at most once, and the task doing the work.
final class Delivery: @unchecked Sendable {
    let run: EnrichmentRun
    private let handler: LockedValue<(@Sendable (EnrichmentResult) -> Void)?>
    /// Set once, before the delivery is published (see `didReceive`), and only read after.
    var task: Task<Void, Never>?

    init(run: EnrichmentRun, handler: @escaping @Sendable (EnrichmentResult) -> Void) {
        self.run = run
        self.handler = LockedValue(handler)
    }

    /// Calls the handler, if it has not been called, with the result as it stands, closing the run; with
    /// `expired`, cancels the work still running (references not settled are reported `expired`).
    func finish(expired: Bool) {
        if let handler = handler.withLock({ slot in
            defer { slot = nil }; return slot
        }) {
            handler(run.close(expired: expired))
        }
        if expired { task?.cancel() }
    }
}
