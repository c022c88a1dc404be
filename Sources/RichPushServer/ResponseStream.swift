#if canImport(Glibc)
    import Glibc
#endif
import CMicroHTTPD
import RichPush

/// A response body written while it is sent (chunked): a task writes, libmicrohttpd's thread reads. When the
/// reader finds nothing to send, it suspends the connection; the next write (or the end) resumes it.
package final class ResponseStream: Sendable {
    private struct State {
        var buffer: [UInt8] = []
        var offset = 0
        var finished = false
        var connection: Connection? = nil
        var suspended = false
    }

    private let state = LockedValue(State())

    package init() {}

    /// Appends bytes to send.
    package func write(_ bytes: [UInt8]) {
        state.withLock { state in
            if state.offset == state.buffer.count {
                state.buffer.removeAll(keepingCapacity: true)
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

    /// Resumes the connection if the reader suspended it. Suspending and resuming both happen under the lock,
    /// so a resume never comes before the suspend it answers.
    private static func wake(_ state: inout State) {
        guard state.suspended, let connection = state.connection else { return }
        state.suspended = false
        MHD_resume_connection(connection.pointer)
    }

    func attach(to connection: Connection) {
        state.withLock { $0.connection = connection }
    }

    /// libmicrohttpd's content reader: copies what is buffered, or suspends until there is some.
    static let reader: MHD_ContentReaderCallback = { context, _, destination, capacity in
        let stream = Unmanaged<ResponseStream>.fromOpaque(context!).takeUnretainedValue()
        return stream.state.withLock { state in
            let available = state.buffer.count - state.offset
            if available > 0 {
                let count = min(available, capacity)
                state.buffer.withUnsafeBytes { bytes in
                    UnsafeMutableRawPointer(destination!).copyMemory(from: bytes.baseAddress! + state.offset, byteCount: count)
                }
                state.offset += count
                return count
            }
            if state.finished { return cmhd_end_of_stream }
            if let connection = state.connection {
                state.suspended = true
                MHD_suspend_connection(connection.pointer)
            }
            return 0
        }
    }

    /// libmicrohttpd's release of the reader's context.
    static let release: MHD_ContentReaderFreeCallback = { context in
        Unmanaged<ResponseStream>.fromOpaque(context!).release()
    }
}
