#if canImport(Glibc)
    import Glibc
#endif

/// A value guarded by a pthread mutex, shared between threads; a thread of our own can also wait on it until
/// the value has what it needs (`wait`, woken by `update`).
///
/// We use this rather than `Synchronization.Mutex` because on Linux `Mutex` locks with raw futex calls, which
/// ThreadSanitizer cannot see: every access under it is reported as a race (reproduced with a four-thread
/// counter), which would make `make tsan` useless. pthread mutexes are intercepted by TSan, so its reports
/// stay meaningful.
///
/// The mutex is glibc's adaptive kind (`PTHREAD_MUTEX_ADAPTIVE_NP`): a thread that finds it held spins briefly
/// before it sleeps in the kernel. The sections under these locks are short (a counter, an append, a table entry),
/// and the default kind put a waiter to sleep at once: a `futex` call and a context switch for a wait of a few
/// hundred nanoseconds. Measured in alternated pairs (issue 26, round three): `serve`'s payloads at 64 connections
/// 0.951x the CPU a payload (0.932-0.995, 6 pairs), NDJSON bodies 0.975x (0.871-0.992, 6 pairs), `stream`'s
/// campaign 0.992x (within noise).
///
/// The value lives behind a pointer of its own, so that reaching it under the lock costs no dynamic exclusivity
/// check (the lock already gives that exclusivity): as a stored property of the class, every section paid a
/// `swift_beginAccess` and a `swift_endAccess` (in `GET /healthz`'s profile, issue 26 round thirteen). Marking the
/// sections `@inlinable` would not specialize them in other modules: Swift 6.3 does not inline a `package`
/// declaration's body across modules without library evolution (tried: a `public` one is inlined, a `package` one
/// never), and `public` would put this type in the library's interface.
package final class LockedValue<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private let value: UnsafeMutablePointer<Value>

    package init(_ value: Value) {
        self.value = .allocate(capacity: 1)
        self.value.initialize(to: value)
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        value.deinitialize(count: 1)
        value.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }

    /// Runs `body` with exclusive access to the value when no other thread holds the lock now; nil, without
    /// running it, when one does. Never waits.
    package func withLockIfAvailable<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }

    /// Changes the value under the lock and wakes the threads waiting in `wait`.
    package func update<Result>(_ body: (inout Value) -> Result) -> Result {
        pthread_mutex_lock(mutex)
        defer {
            pthread_cond_broadcast(condition)
            pthread_mutex_unlock(mutex)
        }
        return body(&value.pointee)
    }

    /// `update` that wakes the waiting threads only when `body` says its change is one they may wait for. For a
    /// value changed far more often than a waiter's condition turns true (a queue filled by many tasks, emptied in
    /// batches by one thread): every wake-up is a futex call and a context switch.
    package func update<Result>(wakingIf body: (inout Value) -> (result: Result, wake: Bool)) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        let (result, wake) = body(&value.pointee)
        if wake { pthread_cond_broadcast(condition) }
        return result
    }

    /// Blocks the calling thread until `take` returns something, evaluating it under the lock now and after
    /// every `update`. Only for threads of our own, never for a task of the cooperative pool.
    package func wait<Result>(_ take: (inout Value) -> Result?) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while true {
            if let result = take(&value.pointee) { return result }
            pthread_cond_wait(condition, mutex)
        }
    }

    /// `wait`, giving up after `timeout`: nil then.
    package func wait<Result>(timeout: Duration, _ take: (inout Value) -> Result?) -> Result? {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let nanoseconds = Int(now.tv_nsec) + Int(timeout.components.attoseconds / 1_000_000_000)
        var end = timespec(
            tv_sec: now.tv_sec + Int(timeout.components.seconds) + nanoseconds / 1_000_000_000,
            tv_nsec: nanoseconds % 1_000_000_000)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while true {
            if let result = take(&value.pointee) { return result }
            if pthread_cond_timedwait(condition, mutex, &end) == ETIMEDOUT { return take(&value.pointee) }
        }
    }
}
