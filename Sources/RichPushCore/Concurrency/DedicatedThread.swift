#if canImport(Glibc)
    import Glibc
#endif

/// Starts `body` on a new, detached POSIX thread, named `name` when given (cut to Linux's 15 bytes; `top -H` and
/// `perf` show it).
///
/// A plain pthread rather than Foundation's `Thread`, so that the library needs only FoundationEssentials:
/// full Foundation (with ICU) adds about 6.5 MB of resident memory to every process.
package func startDedicatedThread(named name: String? = nil, _ body: @escaping @Sendable () -> Void) {
    final class Box: @unchecked Sendable {
        let name: String?
        let body: @Sendable () -> Void
        init(_ name: String?, _ body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
    let context = Unmanaged.passRetained(Box(name, body)).toOpaque()
    var thread = pthread_t()
    let created = pthread_create(
        &thread, nil,
        { context in
            let box = Unmanaged<Box>.fromOpaque(context!).takeRetainedValue()
            if let name = box.name { nameThisThread(name) }
            box.body()
            return nil
        }, context)
    // Failing to create a thread means the process is out of resources: not an input error.
    guard created == 0 else { fatalError("pthread_create failed: \(created)") }
    pthread_detach(thread)
}

/// Names the calling thread (what `pthread_setname_np` does, which Glibc's module does not expose): its `comm` in
/// /proc, at most 15 bytes; a process's main thread names the process (in `ps` and `top`). A thread left unnamed is
/// harmless, so a failure is ignored.
package func nameThisThread(_ name: String) {
    let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return }
    defer { close(descriptor) }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
}
