import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// SIGTERM and SIGINT, turned from process death into a request to drain: the signals are ignored as such and
/// `onRequest` runs once, on a queue of its own, at the first of them. Later signals are ignored: a drain is
/// bounded by its own timeouts.
///
/// The signals are taken over by the time `init` returns. On Linux, Dispatch registers a signal source
/// asynchronously, on its manager thread, and only then installs its own handler for the signal (one that hands the
/// signal to its signalfd); until then the disposition set here applies. So `init` waits for each source's
/// registration: before, a SIGTERM sent right after `serve` announced its listener could come while the disposition
/// was still `SIG_IGN`, and was lost (the process never drained). And the disposition is set to `SIG_IGN` only while
/// it is still the default: once Dispatch's handler is installed (by an earlier instance in the process), replacing
/// it would send every later signal to a thread that discards it.
// Unchecked: `sources` is set once in init; Dispatch's sources are safe to cancel from any thread.
package final class TerminationSignals: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]
    private let requested = LockedValue(false)

    /// Starts watching `signals` (SIGTERM and SIGINT unless told otherwise); `onRequest` runs once, at the first of
    /// them. Returns once every one is taken over.
    ///
    /// With `everyTime`, `onRequest` runs at each of them instead (SIGHUP's reload: `serve --tenants`).
    package init(
        signals: [Int32] = [SIGTERM, SIGINT], everyTime: Bool = false, onRequest: @escaping @Sendable () -> Void
    ) {
        let queue = DispatchQueue(label: "richpush.signals")
        let requested = requested
        let registered = DispatchSemaphore(value: 0)
        sources = signals.map { number in
            var current = sigaction()
            sigaction(number, nil, &current)
            if current.__sigaction_handler.sa_handler == nil {  // SIG_DFL: the process would end at once.
                signal(number, SIG_IGN)
            }
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                let first = requested.withLock { requested in
                    defer { requested = true }
                    return !requested
                }
                if first || everyTime { onRequest() }
            }
            source.setRegistrationHandler { registered.signal() }
            source.resume()
            return source
        }
        // Bounded, so that a Dispatch that never registers cannot hang a start: the manager thread registers in
        // microseconds; past 10 s the signals are watched as they were before, from whenever they register. One
        // deadline for them all: 10 s a signal would let a start wait 20 s before reading its first input.
        let deadline = DispatchTime.now() + .seconds(10)
        for _ in signals where registered.wait(timeout: deadline) == .timedOut { break }
    }

    deinit {
        for source in sources { source.cancel() }
    }
}
