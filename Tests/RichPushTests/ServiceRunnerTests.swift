import Testing

@testable import RichPush

/// The one lifecycle of `serve`, `worker` and `stream`: graceful shutdown in reverse order, the drain timeout that
/// cancels and shuts the engine down, a service that ends or fails ending the others. In this process, with
/// `shutdownGracefully()` standing for the signal (the signals themselves are the CLI tests').
@Suite("ServiceRunner: one lifecycle, one drain policy", .timeLimit(.minutes(1)))
struct ServiceRunnerTests {
    /// A service that records what happens to it, named: started, asked to shut down gracefully, cancelled, ended.
    /// Once asked, it drains for `drain` (a wait that ends early only when cancelled), or, with `drain` nil, until
    /// cancelled.
    struct Recorder: LifecycleService {
        let name: String
        let events: LockedValue<[String]>
        var drain: Duration? = .zero
        var failure: (any Error)? = nil

        func run() async throws {
            events.withLock { $0.append("\(name) started") }
            defer { events.withLock { $0.append("\(name) ended") } }
            if let failure { throw failure }
            await withTaskCancellationHandler {
                try? await gracefulShutdown()
                events.withLock { $0.append("\(name) asked") }
                if let drain {
                    try? await Task.sleep(for: drain)
                } else {
                    await WorkGate().untilClosed()
                }
            } onCancel: {
                events.withLock { $0.append("\(name) cancelled") }
            }
        }
    }

    struct Failure: Error, Equatable {}

    // Each test has its own (a suite's instance per test).
    let bed: TestBed
    let enricher: Enricher
    let events = LockedValue<[String]>([])

    init() throws {
        bed = try TestBed()
        enricher = try Enricher(configuration: bed.configuration)
    }

    @Test("the graceful shutdown asks the last service first, and each before it once the ones after have ended")
    func reverseOrder() async throws {
        let runner = ServiceRunner(drainTimeout: .seconds(60), handlingSignals: false)
        let services: [any LifecycleService] = [
            Recorder(name: "health", events: events),
            Recorder(name: "worker", events: events, drain: .milliseconds(200)),
        ]
        let running = Task { try await runner.run(services, enricher: enricher) }
        try await waitUntil("both services to start") { events.withLock { $0.count } == 2 }
        runner.shutdownGracefully()
        try await running.value
        let order = events.withLock { $0 }.filter { !$0.hasSuffix("started") }
        #expect(order == ["worker asked", "worker ended", "health asked", "health ended"])
        #expect(!enricher.gate.isOpen, "the engine is shut down at the end")
    }

    @Test(
        """
        past the drain timeout the services still draining are cancelled and the engine's payloads end cancelled, long \
        before their deadlines
        """
    )
    func drainTimeout() async throws {
        let runner = ServiceRunner(drainTimeout: .milliseconds(300), handlingSignals: false)
        // A payload in flight that would end at its 60 s deadline, and a service that never drains.
        let stalled = Task { await enricher.enrich(TestBed.adobePayload(bed.url("/stall")), timeout: .seconds(60)) }
        try await untilConnected(bed.origin, count: 1)
        let started = ContinuousClock.now
        runner.shutdownGracefully()
        try await runner.run([Recorder(name: "stuck", events: events, drain: nil)], enricher: enricher)
        let took = ContinuousClock.now - started
        #expect(took >= .milliseconds(300), "the services drained for the whole timeout")
        // The payload's deadline is 60 s away: a runner that waited for it would take that long.
        #expect(took < .seconds(20))
        #expect(events.withLock { $0 }.contains("stuck cancelled"))
        #expect(await stalled.value.outcome == .cancelled)
        #expect(bed.entriesOnDisk().isEmpty, "left behind: \(bed.entriesOnDisk())")
    }

    @Test(
        """
        a service that returns starts the graceful shutdown of the others; one that throws has its error rethrown once \
        they have ended
        """
    )
    func serviceEnds() async throws {
        let runner = ServiceRunner(drainTimeout: nil, handlingSignals: false)
        try await runner.run(
            [
                Recorder(name: "listener", events: events),
                ClosureService { events.withLock { $0.append("input ended") } },
            ],
            enricher: enricher)
        #expect(
            events.withLock { $0 }.filter { !$0.hasSuffix("started") } == [
                "input ended", "listener asked", "listener ended",
            ])
        events.withLock { $0.removeAll() }
        let failing = ServiceRunner(drainTimeout: .seconds(60), handlingSignals: false)
        await #expect(throws: Failure.self) {
            try await failing.run(
                [
                    Recorder(name: "listener", events: events),
                    Recorder(name: "worker", events: events, failure: Failure()),
                ],
                enricher: try Enricher(configuration: bed.configuration))
        }
        #expect(events.withLock { $0 }.contains("listener ended"))
    }

    @Test(
        "a graceful shutdown asked before run is seen at its start; a handler registered after the request runs at once"
    )
    func requestBeforeRun() async throws {
        let runner = ServiceRunner(drainTimeout: .seconds(60), handlingSignals: false)
        runner.shutdownGracefully()
        try await runner.run([Recorder(name: "service", events: events)], enricher: enricher)
        #expect(events.withLock { $0 } == ["service started", "service asked", "service ended"])
        let shutdown = GracefulShutdown()
        shutdown.trigger()
        let ran = LockedValue(0)
        await GracefulShutdown.$current.withValue(shutdown) {
            await withGracefulShutdownHandler {
                #expect(ran.withLock { $0 } == 1)
            } onGracefulShutdown: {
                ran.withLock { $0 += 1 }
            }
        }
        shutdown.trigger()
        #expect(ran.withLock { $0 } == 1, "a handler runs once")
    }

    @Test("gracefulShutdown() throws when its task is cancelled first, outside a runner or in one")
    func cancelledWait() async throws {
        let outside = Task { try await gracefulShutdown() }
        outside.cancel()
        await #expect(throws: CancellationError.self) { try await outside.value }
        let inside = Task {
            try await GracefulShutdown.$current.withValue(GracefulShutdown()) { try await gracefulShutdown() }
        }
        inside.cancel()
        await #expect(throws: CancellationError.self) { try await inside.value }
    }
}
