
/// The shape of iOS's `UNNotificationServiceExtension`, for code ported from an app: `didReceive` starts the
/// work, the content handler is called once with the result, and `serviceExtensionTimeWillExpire` hands over
/// the best attempt so far at once.
///
/// The content handler is called exactly once per `didReceive`, whichever comes first: completion, the
/// deadline, or `serviceExtensionTimeWillExpire()`.
public final class MediaServiceExtension: Sendable {
    private let enricher: Enricher
    private let current = LockedValue<Delivery?>(nil)

    /// An extension on this engine.
    public init(enricher: Enricher) {
        self.enricher = enricher
    }

    /// Starts processing `payload`; `contentHandler` receives the result once. A second call while one is in
    /// progress expires the first (as iOS would start a new extension instance).
    public func didReceive(
        _ payload: Payload, deadline: ContinuousClock.Instant? = nil,
        withContentHandler contentHandler: @escaping @Sendable (EnrichmentResult) -> Void
    ) {
        let run = EnrichmentRun(payload: payload, configuration: enricher.configuration)
        let delivery = Delivery(run: run, handler: contentHandler)
        current.withLock { $0 }?.expire()
        current.withLock { $0 = delivery }
        let deadline = deadline ?? .now + enricher.configuration.deadline
        delivery.task.withLock { task in
            task = Task { [enricher] in
                await enricher.process(run, deadline: deadline)
                delivery.deliver(run.result())
            }
        }
    }

    /// Delivers the best attempt so far now (outcome `expired` unless everything had finished), and cancels
    /// the transfers still running.
    public func serviceExtensionTimeWillExpire() {
        current.withLock { $0 }?.expire()
    }
}

/// One `didReceive`: its handler, called at most once, and the task doing the work.
final class Delivery: Sendable {
    let run: EnrichmentRun
    private let handler: LockedValue<(@Sendable (EnrichmentResult) -> Void)?>
    let task = LockedValue<Task<Void, Never>?>(nil)

    init(run: EnrichmentRun, handler: @escaping @Sendable (EnrichmentResult) -> Void) {
        self.run = run
        self.handler = LockedValue(handler)
    }

    /// Calls the handler with `result` if it has not been called; returns whether this call delivered.
    @discardableResult
    func deliver(_ result: EnrichmentResult) -> Bool {
        guard let handler = handler.withLock({ slot in defer { slot = nil }; return slot }) else { return false }
        handler(result)
        return true
    }

    /// Delivers the best attempt so far and cancels the remaining work.
    func expire() {
        let result = run.result(expired: true)
        deliver(result)
        task.withLock { $0 }?.cancel()
    }
}
