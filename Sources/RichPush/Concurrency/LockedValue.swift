#if canImport(Glibc)
    import Glibc
#endif

/// A value guarded by a pthread mutex, shared between threads.
///
/// We use this rather than `Synchronization.Mutex` because on Linux `Mutex` locks with raw futex calls, which
/// ThreadSanitizer cannot see: every access under it is reported as a race (reproduced with a four-thread
/// counter), which would make `make tsan` useless. pthread mutexes are intercepted by TSan, so its reports
/// stay meaningful.
package final class LockedValue<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
