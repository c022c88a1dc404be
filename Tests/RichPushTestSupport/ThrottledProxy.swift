import Foundation
import Synchronization

/// A slow link: a TCP proxy on a loopback port to a server's loopback `upstream` port, passing what a client sends
/// at once and what the server answers at `bytesPerSecond` at most (a slice every 20 ms). Each connection is
/// pumped by a thread of its own; every thread ends when `stop()` is called, when either side closes, or after
/// `lifetime` at the latest (the threads hold the proxy until then: call `stop()`).
package final class ThrottledProxy: Sendable {
    /// The port clients connect to.
    package let port: Int
    private let listener: Int32
    private let upstream: Int
    private let bytesPerSecond: Int
    private let end: ContinuousClock.Instant
    private let stopped = Atomic<Bool>(false)
    private let answered = Atomic<Int>(0)

    /// The bytes of the server's answers passed on so far.
    package var bytesAnswered: Int { answered.load(ordering: .relaxed) }

    package init(upstream: Int, bytesPerSecond: Int, lifetime: Duration = .seconds(120)) throws {
        let (descriptor, port) = try loopbackSocket()
        guard listen(descriptor, 16) == 0 else {
            close(descriptor)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EINVAL)
        }
        listener = descriptor
        self.port = port
        self.upstream = upstream
        self.bytesPerSecond = bytesPerSecond
        end = .now + lifetime
        Thread { [self] in acceptLoop() }.start()
    }

    /// Stops accepting and pumping; the threads close their sockets within one poll (20 ms).
    package func stop() {
        stopped.store(true, ordering: .relaxed)
    }

    private var running: Bool { !stopped.load(ordering: .relaxed) && ContinuousClock.now < end }

    private func acceptLoop() {
        defer { close(listener) }
        while running {
            var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 20) > 0 else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            guard let server = try? Self.connect(upstream) else {
                close(client)
                continue
            }
            Thread { [self] in pump(client: client, server: server) }.start()
        }
    }

    private static func connect(_ port: Int) throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
        guard withSocketAddress("127.0.0.1", port: port, { Glibc.connect(descriptor, $0, $1) }) == 0 else {
            close(descriptor)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECONNREFUSED)
        }
        return descriptor
    }

    /// Passes bytes both ways until either side closes: the client's at once, the server's as the rate allows.
    private func pump(client: Int32, server: Int32) {
        defer {
            close(client)
            close(server)
        }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var allowance = 0.0
        var last = ContinuousClock.now
        while running {
            let now = ContinuousClock.now
            allowance = min(
                allowance + Double(bytesPerSecond) * (now - last).secondsValue, Double(bytesPerSecond) / 50 + 1)
            last = now
            // The server is read only while the link has room: what it sends meanwhile waits in the socket.
            let serverAllowed = Int(allowance)
            var sockets = [
                pollfd(fd: client, events: Int16(POLLIN), revents: 0),
                pollfd(fd: server, events: serverAllowed > 0 ? Int16(POLLIN) : 0, revents: 0),
            ]
            guard poll(&sockets, 2, 20) >= 0 || errno == EINTR else { return }
            if sockets[0].revents != 0 {
                let count = read(client, &buffer, buffer.count)
                guard count > 0, Self.writeAll(server, buffer, count) else { return }
            }
            if sockets[1].revents != 0, serverAllowed > 0 {
                let count = read(server, &buffer, min(buffer.count, serverAllowed))
                guard count > 0, Self.writeAll(client, buffer, count) else { return }
                allowance -= Double(count)
                answered.add(count, ordering: .relaxed)
            }
        }
    }

    private static func writeAll(_ descriptor: Int32, _ buffer: [UInt8], _ count: Int) -> Bool {
        var written = 0
        while written < count {
            let step = buffer.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, count - written) }
            if step < 0, errno == EINTR { continue }
            guard step > 0 else { return false }
            written += step
        }
        return true
    }
}

extension Duration {
    /// The duration in seconds, with its fraction (RichPushCore's `inSeconds`, which test support does not import).
    var secondsValue: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
