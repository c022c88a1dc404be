#if canImport(Glibc)
    import Glibc
#endif

/// Starts `body` on a new, detached POSIX thread.
///
/// A plain pthread rather than Foundation's `Thread`, so that the library needs only FoundationEssentials:
/// full Foundation (with ICU) adds about 6.5 MB of resident memory to every process.
package func startDedicatedThread(_ body: @escaping @Sendable () -> Void) {
    final class Box: @unchecked Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let context = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let created = pthread_create(
        &thread, nil,
        { context in
            let box = Unmanaged<Box>.fromOpaque(context!).takeRetainedValue()
            box.body()
            return nil
        }, context)
    // Failing to create a thread means the process is out of resources: not an input error.
    guard created == 0 else { fatalError("pthread_create failed: \(created)") }
    pthread_detach(thread)
}
