import CMicroHTTPD
import RichPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// A response body written while it is sent (chunked): a task writes, libmicrohttpd's thread reads. When the
/// reader finds nothing to send, it suspends the connection; the next write (or the end) resumes it.
///
/// Bounded: a writer asks `waitForRoom()` before it makes more to write, and waits while `capacity` bytes or more
/// are waiting for a client that does not read; the reader, as it hands bytes to the socket, lets it go on. When the
/// connection goes before the body's end (the client closed it, timed out, or the server stopped), the stream is
/// *abandoned*: what is written is dropped, `waitForRoom()` answers false, and the action given to
/// `onAbandon` runs (the service cancels the work behind the body).
package final class ResponseStream: Sendable {
    /// Bytes that may wait to be sent before a writer is held. Default 256 KiB: eight of libmicrohttpd's 32 KiB
    /// reads, about a thousand typical result lines, so a client that reads keeps the writer going; and per
    /// request, so 256 NDJSON requests in flight hold at most 64 MiB of results for clients that do not read.
    package static let defaultCapacity = 256 * 1024

    private struct State {
        var buffer: [UInt8] = []
        var offset = 0
        var finished = false
        /// The reader returned the end of the body: the client has all of it (or the kernel does).
        var ended = false
        var abandoned = false
        var connection: Connection? = nil
        var suspended = false
        var sent = 0
        var waiter: CheckedContinuation<Bool, Never>? = nil
        var onAbandon: (@Sendable () -> Void)? = nil

        var waiting: Int { buffer.count - offset }
    }

    private let state = LockedValue(State())
    /// The bytes waiting at which `waitForRoom()` holds its caller.
    package let capacity: Int

    package init(capacity: Int = defaultCapacity) {
        self.capacity = capacity
    }

    /// Appends bytes to send; dropped once the stream is abandoned.
    package func write(_ bytes: [UInt8]) {
        state.withLock { state in
            guard !state.abandoned else { return }
            if state.offset == state.buffer.count {
                state.buffer.removeAll(keepingCapacity: true)
                state.offset = 0
            } else if state.offset >= state.buffer.count / 2 {
                // What was sent goes before it is half the buffer: the buffer stays within twice what waits.
                state.buffer.removeSubrange(0..<state.offset)
                state.offset = 0
            }
            state.buffer += bytes
            Self.wake(&state)
        }
    }

    /// Ends the body once what was written is sent.
    package func finish() {
        state.withLock { state in
            state.finished = true
            Self.wake(&state)
        }
    }

    /// Returns true at once while fewer than `capacity` bytes wait to be sent; otherwise waits until the reader has
    /// sent enough. False when the stream is abandoned (nothing written will be sent). One caller at a time.
    package func waitForRoom() async -> Bool {
        await withCheckedContinuation { continuation in
            let answer: Bool? = state.withLock { state in
                if state.abandoned { return false }
                if state.waiting < capacity { return true }
                state.waiter = continuation
                return nil
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }

    /// Whether `waitForRoom()` would return true at once: not abandoned, and fewer than `capacity` bytes waiting.
    package var hasRoom: Bool {
        state.withLock { !$0.abandoned && $0.waiting < capacity }
    }

    /// Runs `action` once, when the stream is abandoned (at once if it already is).
    package func onAbandon(_ action: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.abandoned { return true }
            state.onAbandon = action
            return false
        }
        if now { action() }
    }

    /// What the stream holds and has done, for metrics and the drain's report.
    package struct Status: Sendable {
        /// Bytes written and not yet handed to the connection.
        package var waiting: Int
        /// Bytes handed to the connection.
        package var sent: Int
        /// Whether a writer is held for want of room.
        package var writerHeld: Bool
        /// Whether the reader has suspended the connection for want of bytes.
        package var suspended: Bool
    }

    package var status: Status {
        state.withLock {
            Status(waiting: $0.waiting, sent: $0.sent, writerHeld: $0.waiter != nil, suspended: $0.suspended)
        }
    }

    /// Resumes the connection if the reader suspended it. Suspending and resuming both happen under the lock,
    /// so a resume never comes before the suspend it answers, and `finish()` returns with every suspend answered:
    /// the drain ends the streams and then stops the server, which libmicrohttpd refuses (it aborts the process)
    /// while a connection is suspended. Resuming after the lock instead (tried in issue 26, round fourteen) let
    /// `finish()` return while a writer that had taken the connection had not yet resumed it; it saved no CPU.
    private static func wake(_ state: inout State) {
        guard state.suspended, let connection = state.connection else { return }
        state.suspended = false
        connection.resume()
    }

    func attach(to connection: Connection) {
        state.withLock { $0.connection = connection }
    }

    /// libmicrohttpd's content reader: copies what is buffered, or suspends until there is some. A writer held for
    /// room is let go once less than `capacity` waits.
    static let reader: MHD_ContentReaderCallback = { context, _, destination, capacity in
        let stream = Unmanaged<ResponseStream>.fromOpaque(context!).takeUnretainedValue()
        var released: CheckedContinuation<Bool, Never>? = nil
        defer { released?.resume(returning: true) }
        return stream.state.withLock { state in
            let available = state.waiting
            if available > 0 {
                let count = min(available, capacity)
                state.buffer.withUnsafeBytes { bytes in
                    UnsafeMutableRawPointer(destination!).copyMemory(
                        from: bytes.baseAddress! + state.offset, byteCount: count)
                }
                state.offset += count
                state.sent += count
                if state.waiting < stream.capacity {
                    released = state.waiter
                    state.waiter = nil
                }
                return count
            }
            if state.finished {
                state.ended = true
                return cmhd_end_of_stream
            }
            if let connection = state.connection {
                // The server is stopping (it never stops with a connection suspended): the body is cut here, and
                // the connection closed, so that the client sees it incomplete.
                guard connection.suspend() else { return cmhd_end_with_error }
                state.suspended = true
            }
            return 0
        }
    }

    /// libmicrohttpd's release of the reader's context, when the connection is done with the response: after its
    /// end, or when the connection went first (then the stream is abandoned).
    static let release: MHD_ContentReaderFreeCallback = { context in
        let stream = Unmanaged<ResponseStream>.fromOpaque(context!).takeRetainedValue()
        stream.abandonUnlessEnded()
    }

    private func abandonUnlessEnded() {
        let (waiter, action) = state.withLock { state -> (CheckedContinuation<Bool, Never>?, (@Sendable () -> Void)?) in
            // The connection is gone either way: it is never resumed again. libmicrohttpd releases a response only
            // from a connection it processes, never a suspended one (whose count the server would keep forever).
            assert(!state.suspended, "a suspended connection's response released")
            state.connection = nil
            guard !state.ended, !state.abandoned else { return (nil, nil) }
            state.abandoned = true
            state.buffer = []
            state.offset = 0
            defer {
                state.waiter = nil
                state.onAbandon = nil
            }
            return (state.waiter, state.onAbandon)
        }
        waiter?.resume(returning: false)
        action?()
    }
}
