#if canImport(Glibc)
    import Glibc
#endif

/// Waits on a descriptor another process made non-blocking (a pipe shared with one that set O_NONBLOCK), as a
/// blocking read or write would have waited, where EAGAIN was taken for a failure.
package enum FileDescriptorWait {
    /// Waits until `descriptor` can be read (or is at its end, or failed); false when it cannot be waited on.
    package static func readable(_ descriptor: Int32) -> Bool { wait(descriptor, for: POLLIN) }

    /// Waits until `descriptor` can be written (or failed); false when it cannot be waited on.
    package static func writable(_ descriptor: Int32) -> Bool { wait(descriptor, for: POLLOUT) }

    private static func wait(_ descriptor: Int32, for events: Int32) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(events), revents: 0)
        while true {
            if poll(&entry, 1, -1) >= 0 { return true }
            if errno != EINTR { return false }
        }
    }
}
