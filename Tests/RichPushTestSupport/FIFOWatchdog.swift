import Foundation
import Synchronization

/// Opens the FIFO at a path for writing every 20 ms (for 60 s at most) on a thread of its own, from 500 ms after it
/// starts, and counts the opens that succeed: each is a reader waiting in the FIFO, whose wait the open ends with
/// nothing to read. A blocking open in the code under test then fails its test (the count is not 0) rather than hang
/// it. The first open waits: code that opens the FIFO without blocking holds it open for reading a few microseconds
/// (to see it is no regular file), and an open of the watchdog's in that moment counted it as waiting (seen once in
/// a full run); a blocking reader still waiting at 500 ms is counted all the same.
package final class FIFOWatchdog: Sendable {
    private let state = Mutex<(stopped: Bool, opened: Int)>((false, 0))

    /// Starts watching the FIFO at `path`.
    package init(_ path: String) {
        Thread { [self] in
            usleep(500_000)
            for _ in 0..<3000 {
                // Opened and counted under the lock: a reader the open releases cannot reach `stop()` before
                // the count has it.
                let stopped = state.withLock { state in
                    guard !state.stopped else { return true }
                    let descriptor = open(path, O_WRONLY | O_NONBLOCK)
                    if descriptor >= 0 {
                        close(descriptor)
                        state.opened += 1
                    }
                    return false
                }
                if stopped { return }
                usleep(20_000)
            }
        }.start()
    }

    /// Stops watching; how many readers were found waiting.
    package func stop() -> Int {
        state.withLock { state in
            state.stopped = true
            return state.opened
        }
    }
}
