import Foundation
import Synchronization

/// Watches the cooperative pool through a test run and says on standard error when it ran nothing for
/// `PoolWatch.stall` or more: a test body blocking the pool's threads (two on a two-core machine, shared by every
/// test of the process) holds every timed test beside it, whose failures then read as their own (a probe's deadline
/// passing, a poll not resuming while a conversion ran). Such a body belongs off the pool (`.offPool`, `offPool`).
/// Started by the first `waitUntil`; a thread of its own sends the pool an empty job every quarter second and times
/// how long the job waits to run. It only reports: on a machine that loaded, a test's failure is likely the stall's.
package enum PoolWatch {
    /// The wait that is reported: 2 s (a job waits milliseconds on a machine loaded with two busy processes a core).
    package static let stall = Duration.seconds(2)
    /// How long the watch runs: an hour, past any run of the tests (CI stops them at 20 minutes).
    static let lifetime = Duration.seconds(3_600)
    private static let started = Mutex(false)

    /// Starts the watch, once a process.
    package static func start() {
        let first = started.withLock { started in
            defer { started = true }
            return !started
        }
        guard first else { return }
        let thread = Thread { watch() }
        thread.name = "richpush-tests.pool-watch"
        thread.start()
    }

    private static func watch() {
        let end = ContinuousClock.now + lifetime
        while ContinuousClock.now < end {
            let sent = ContinuousClock.now
            let ran = DispatchSemaphore(value: 0)
            Task.detached { ran.signal() }
            // Waits in steps of a second, bounded by the watch's lifetime as a whole.
            while ran.wait(timeout: .now() + 1) == .timedOut, ContinuousClock.now < end {}
            let waited = ContinuousClock.now - sent
            if waited >= stall {
                let seconds = String(format: "%.1f", waited.secondsValue)
                let line =
                    "richpush-tests: the cooperative pool ran nothing for \(seconds) s: a test body held its "
                    + "threads (move it off the pool: .offPool); timed tests beside it may fail for that\n"
                FileHandle.standardError.write(Data(line.utf8))
            }
            Thread.sleep(forTimeInterval: 0.25)
        }
    }
}
