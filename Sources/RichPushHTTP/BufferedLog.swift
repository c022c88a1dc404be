import RichPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Log lines written by a thread of its own, in batches: the server's thread hands a line over and never waits
/// on standard error (a slow reader, a full pipe). Bounded: past `capacity` bytes waiting, lines are dropped and
/// counted, and the count is written when there is room again. After each write the thread pauses for
/// `batchInterval`, so that under load it wakes a few hundred times a second rather than once per line.
package final class BufferedLog: Sendable {
    private struct Pending {
        var bytes: [UInt8] = []
        var dropped = 0
        var writing = false
    }

    /// Bytes waiting at most. Default 4 MiB: about 20,000 access log lines, seconds of the service's peak rate.
    package static let defaultCapacity = 4 << 20

    /// The pause after each write, in microseconds: 5 ms. Woken for every line, the writer cost a wake-up (a
    /// futex call on the server's thread, a context switch) and a `write` per request, about 3% of the service's
    /// CPU in its benchmark; a line now waits at most this long (plus the write) before it goes out.
    static let batchIntervalMicroseconds: UInt32 = 5000

    private let descriptor: Int32
    private let capacity: Int
    private let pending = LockedValue(Pending())

    package init(descriptor: Int32, capacity: Int = defaultCapacity) {
        self.descriptor = descriptor
        self.capacity = capacity
        startDedicatedThread { [self] in loop() }
    }

    /// Hands a whole line (or lines) over.
    package func append(_ line: [UInt8]) {
        pending.update { pending in
            if pending.bytes.count + line.count > capacity {
                pending.dropped += 1
            } else {
                pending.bytes += line
            }
        }
    }

    /// Waits (a bounded second) until every line handed over so far is written; for the end of the process.
    package func flush() {
        _ = pending.wait(timeout: .seconds(1)) { $0.bytes.isEmpty && !$0.writing ? () : nil }
    }

    private func loop() {
        while true {
            let (bytes, dropped) = pending.wait { pending -> ([UInt8], Int)? in
                guard !pending.bytes.isEmpty || pending.dropped > 0 else { return nil }
                defer {
                    pending.bytes = []
                    pending.dropped = 0
                    pending.writing = true
                }
                return (pending.bytes, pending.dropped)
            }
            var out = bytes
            if dropped > 0 { out += Array("{\"dropped_log_lines\":\(dropped)}\n".utf8) }
            var offset = 0
            while offset < out.count {
                let count = out[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                if count <= 0 { break }
                offset += count
            }
            pending.update { $0.writing = false }
            usleep(Self.batchIntervalMicroseconds)
        }
    }
}
