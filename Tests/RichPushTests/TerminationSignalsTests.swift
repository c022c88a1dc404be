import Foundation
import RichPushCore
import RichPushTestSupport
import Testing

@testable import RichPush

/// SIGTERM and SIGINT taken over for a drain. Tested with SIGUSR2 (the same code path, a signal nothing else in the
/// test process uses), sent to the whole process as `kill` and systemd send SIGTERM.
@Suite("Termination signals", .serialized)
struct TerminationSignalsTests {
    @Test("a signal sent the moment the watcher is made is taken, by every watcher a process makes in turn")
    func takenFromInit() async throws {
        // Three in turn: the first proves the handler is in place when `init` returns (before, the signal sent
        // right away met `SIG_IGN` while Dispatch was still registering); the later ones that a watcher does not
        // undo an earlier one's handler (before, each set `SIG_IGN` again over Dispatch's).
        for round in 1...3 {
            let requests = LockedValue(0)
            let signals = TerminationSignals(signals: [SIGUSR2]) { requests.withLock { $0 += 1 } }
            kill(getpid(), SIGUSR2)
            try await waitUntil("round \(round)'s request", within: .seconds(10), every: .milliseconds(5)) {
                requests.withLock { $0 } == 1
            }
            withExtendedLifetime(signals) {}
        }
    }
}
