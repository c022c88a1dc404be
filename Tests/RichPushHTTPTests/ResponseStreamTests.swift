import Foundation
import RichPushCore
import RichPushTestSupport
import Testing

@testable import RichPushHTTP

/// The NDJSON response body between the task that writes it and libmicrohttpd's thread that reads it: room, the
/// end, and a connection gone first. Driven through the stream's own reader and release callbacks, as
/// libmicrohttpd calls them (no connection attached, so the reader never suspends one).
@Suite struct ResponseStreamTests {
    /// The stream as libmicrohttpd holds it: retained until `release`.
    struct Held {
        let stream: ResponseStream
        let context: UnsafeMutableRawPointer

        init(capacity: Int) {
            stream = ResponseStream(capacity: capacity)
            context = Unmanaged.passRetained(stream).toOpaque()
        }

        /// One call of the reader for up to `count` bytes: what it returned, and the bytes it gave.
        func read(_ count: Int) -> (result: Int, bytes: [UInt8]) {
            var buffer = [CChar](repeating: 0, count: count)
            let result = buffer.withUnsafeMutableBufferPointer {
                ResponseStream.reader(context, 0, $0.baseAddress, count)
            }
            return (result, buffer.prefix(max(result, 0)).map { UInt8(bitPattern: $0) })
        }

        func release() { ResponseStream.release(context) }

        /// libmicrohttpd's end-of-stream value (`MHD_CONTENT_READER_END_OF_STREAM`, -1 as a `ssize_t`).
        static let endOfStream = -1
    }

    @Test("a writer is held once `capacity` bytes wait, and let go when the reader has taken enough of them")
    func room() async throws {
        let held = Held(capacity: 100)
        #expect(await held.stream.waitForRoom())
        held.stream.write([UInt8](repeating: 7, count: 150))
        let stream = held.stream
        let writer = Task { await stream.waitForRoom() }
        try await waitUntil("the writer to be held") { held.stream.status.writerHeld }
        #expect(held.read(40).result == 40)
        // 110 bytes still wait: still held.
        #expect(held.stream.status.writerHeld)
        let taken = held.read(20)
        #expect(taken.result == 20)
        #expect(taken.bytes == [UInt8](repeating: 7, count: 20))
        #expect(await writer.value == true)
        #expect(held.stream.status.waiting == 90)
        #expect(held.stream.status.sent == 60)
        held.stream.finish()
        #expect(held.read(1000).result == 90)
        #expect(held.read(1000).result == Held.endOfStream)
        held.release()
    }

    @Test(
        """
        a connection gone before the end abandons the stream: the held writer hears false, the action runs once, \
        writes are dropped
        """
    )
    func abandoned() async throws {
        let held = Held(capacity: 10)
        let cancelled = LockedValue(0)
        held.stream.onAbandon { cancelled.withLock { $0 += 1 } }
        held.stream.write([UInt8](repeating: 1, count: 10))
        let stream = held.stream
        let writer = Task { await stream.waitForRoom() }
        try await waitUntil("the writer to be held") { held.stream.status.writerHeld }
        held.release()
        try await waitUntil("the writer to be let go") { !held.stream.status.writerHeld }
        #expect(await writer.value == false)
        #expect(cancelled.withLock { $0 } == 1)
        #expect(await held.stream.waitForRoom() == false)
        held.stream.write([1, 2, 3])
        #expect(held.stream.status.waiting == 0)
        // An action given after the abandonment runs at once.
        held.stream.onAbandon { cancelled.withLock { $0 += 1 } }
        #expect(cancelled.withLock { $0 } == 2)
    }

    @Test("the release after the body's end abandons nothing")
    func endedNormally() async throws {
        let held = Held(capacity: 10)
        let cancelled = LockedValue(0)
        held.stream.onAbandon { cancelled.withLock { $0 += 1 } }
        held.stream.write([1, 2, 3])
        held.stream.finish()
        #expect(held.read(10).bytes == [1, 2, 3])
        #expect(held.read(10).result == Held.endOfStream)
        held.release()
        #expect(cancelled.withLock { $0 } == 0)
    }
}
