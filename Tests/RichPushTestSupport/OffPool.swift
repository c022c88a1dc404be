import Foundation
import Synchronization
import Testing

/// A trait that runs each test on a thread of its own instead of the cooperative pool: for tests whose bodies block
/// (libvips called directly, files written and fsynced, directories removed, a child process waited for). The pool
/// has one thread per core, two on this machine, and every test in the process shares it: a body that blocks one
/// for seconds on a busy disk or a libvips lock held every timed test beside it (seen: `HostileServerTests`' good
/// payload waiting 3 s, its bound 2 s). Under this trait the test's task prefers a `TestThreadExecutor`, so its
/// synchronous code and the jobs of its child tasks run there; unstructured tasks it starts, and the library's own
/// threads, are unaffected.
package struct OffPoolTrait: TestTrait, SuiteTrait, TestScoping {
    package var isRecursive: Bool { true }

    package func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        // Around each test case (each argument of a parameterized test), not around a suite as a whole.
        testCase == nil ? nil : self
    }

    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let executor = TestThreadExecutor()
        defer { executor.finish() }
        try await withTaskExecutorPreference(executor) { try await function() }
    }
}

extension Trait where Self == OffPoolTrait {
    /// Runs each test on a thread of its own, off the cooperative pool (`OffPoolTrait`).
    package static var offPool: Self { Self() }
}

/// A task executor with one thread of its own, which runs the jobs given to it in order; ended by `finish()`, once
/// the work that prefers it is done.
package final class TestThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var jobs: [UnownedJob] = []
    private var finished = false
    private var threadRunning = false

    package init() {}

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        // The thread starts with the first job, and again for a job that comes after it ended (a late resumption
        // must still run).
        let start = !threadRunning
        threadRunning = true
        condition.signal()
        condition.unlock()
        if start {
            let thread = Thread { [self] in run() }
            thread.name = "richpush-tests.off-pool"
            thread.start()
        }
    }

    /// Ends the thread once the jobs already given are run.
    package func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
    }

    /// Whether the caller runs on the thread of a `TestThreadExecutor`. (Not by `Thread.current.name`: on Linux it
    /// gave the pool's "com.apple.root.default-qos" on this thread too.)
    package static var isCurrentThread: Bool { threads.withLock { $0.contains(pthread_self()) } }
    private static let threads = Mutex<Set<pthread_t>>([])

    private func run() {
        Self.threads.withLock { _ = $0.insert(pthread_self()) }
        defer { Self.threads.withLock { _ = $0.remove(pthread_self()) } }
        while true {
            condition.lock()
            while jobs.isEmpty && !finished { condition.wait() }
            if jobs.isEmpty {
                threadRunning = false
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Runs blocking work (a child process, a key generation) on a thread of its own, so that it never holds one
/// of the cooperative pool's few threads while other tests wait on their deadlines.
package func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
