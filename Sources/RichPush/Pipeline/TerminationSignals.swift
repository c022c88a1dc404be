#if canImport(Glibc)
    import Glibc
#endif
import Dispatch

/// SIGTERM and SIGINT, turned from process death into a request to drain: the signals are ignored as such and
/// `onRequest` runs once, on a queue of its own, at the first of them. Later signals are ignored: a drain is
/// bounded by its own timeouts.
// Unchecked: `sources` is set once in init; Dispatch's sources are safe to cancel from any thread.
package final class TerminationSignals: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]
    private let requested = LockedValue(false)

    /// Starts watching; `onRequest` runs once, at the first SIGTERM or SIGINT.
    package init(onRequest: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "richpush.signals")
        let requested = requested
        sources = [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                let first = requested.withLock { requested in
                    defer { requested = true }
                    return !requested
                }
                if first { onRequest() }
            }
            source.resume()
            return source
        }
    }

    deinit {
        for source in sources { source.cancel() }
    }
}
