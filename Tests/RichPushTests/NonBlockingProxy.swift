import Foundation

@testable import RichPush

/// A loopback proxy in front of a `RedisServer` that passes every command on as it came but XREADGROUP, from which
/// it drops `BLOCK <milliseconds>`: Redis then answers at once, as a proxy or a look-alike server that does not
/// honour BLOCK would. It notes when each XREADGROUP came. Replies pass back byte for byte.
///
/// Two threads per connection (one each way), blocking calls; `stop()` ends them all.
final class NonBlockingProxy: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let upstreamPort: Int
    private let state = LockedValue<(reads: [ContinuousClock.Instant], sockets: [Int32], stopped: Bool)>(
        ([], [], false))

    init(_ redis: RedisServer) throws {
        (listener, port) = try loopbackSocket()
        upstreamPort = redis.port
        guard listen(listener, 16) == 0 else {
            close(listener)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EINVAL)
        }
        Thread { [self] in acceptLoop() }.start()
    }

    /// When each XREADGROUP passed, in order.
    var reads: [ContinuousClock.Instant] { state.withLock { $0.reads } }

    /// Ends the listener and every connection (their threads return, and close them).
    func stop() {
        state.withLock { state in
            state.stopped = true
            for socket in state.sockets { shutdown(socket, Int32(SHUT_RDWR)) }
        }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    deinit { close(listener) }

    private func acceptLoop() {
        while case let client = accept(listener, nil, nil), client >= 0 {
            guard let upstream = try? Self.connect(upstreamPort) else {
                close(client)
                continue
            }
            let accepted = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.sockets += [client, upstream]
                return true
            }
            guard accepted else {
                close(client)
                close(upstream)
                return
            }
            let finished = LockedValue(0)
            let end: @Sendable () -> Void = { [self] in
                shutdown(client, Int32(SHUT_RDWR))
                shutdown(upstream, Int32(SHUT_RDWR))
                // The second thread to end closes both: no descriptor is closed while the other still uses it.
                guard
                    finished.withLock({
                        $0 += 1; return $0
                    }) == 2
                else { return }
                state.withLock { $0.sockets.removeAll { $0 == client || $0 == upstream } }
                close(client)
                close(upstream)
            }
            Thread { [self] in
                commands(from: client, to: upstream)
                end()
            }.start()
            Thread {
                var buffer = [UInt8](repeating: 0, count: 16384)
                while case let count = read(upstream, &buffer, buffer.count), count > 0,
                    Self.send(buffer[..<count], to: client)
                {}
                end()
            }.start()
        }
    }

    /// Reads the client's commands (RESP arrays of bulk strings, as hiredis sends them), drops BLOCK and its value
    /// from each XREADGROUP, and passes each on.
    private func commands(from client: Int32, to upstream: Int32) {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while case let count = read(client, &buffer, buffer.count), count > 0 {
            pending += buffer[..<count]
            while let (command, length) = Self.command(in: pending) {
                pending.removeFirst(length)
                var arguments = command
                if arguments.first.map({ String(decoding: $0, as: UTF8.self).uppercased() }) == "XREADGROUP" {
                    state.withLock { $0.reads.append(.now) }
                    if let block = arguments.firstIndex(where: {
                        String(decoding: $0, as: UTF8.self).uppercased() == "BLOCK"
                    }), block + 1 < arguments.count {
                        arguments.removeSubrange(block...(block + 1))
                    }
                }
                var encoded = Array("*\(arguments.count)\r\n".utf8)
                for argument in arguments { encoded += Array("$\(argument.count)\r\n".utf8) + argument + [13, 10] }
                guard Self.send(encoded[...], to: upstream) else { return }
            }
        }
    }

    /// The first whole command in `bytes` and its length in bytes; nil until it has all come.
    private static func command(in bytes: [UInt8]) -> ([[UInt8]], Int)? {
        var index = 0
        func line() -> String? {
            guard let end = bytes[index...].firstIndex(of: 13), end + 1 < bytes.count else { return nil }
            let text = String(decoding: bytes[index..<end], as: UTF8.self)
            index = end + 2
            return text
        }
        guard let head = line(), head.first == "*", let count = Int(head.dropFirst()) else { return nil }
        var arguments: [[UInt8]] = []
        for _ in 0..<count {
            guard let size = line(), size.first == "$", let length = Int(size.dropFirst()),
                index + length + 2 <= bytes.count
            else { return nil }
            arguments.append(Array(bytes[index..<(index + length)]))
            index += length + 2
        }
        return (arguments, index)
    }

    private static func send(_ bytes: ArraySlice<UInt8>, to socket: Int32) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { write(socket, $0.baseAddress! + sent, bytes.count - sent) }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }

    private static func connect(_ port: Int) throws -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard socket >= 0, connected else {
            if socket >= 0 { close(socket) }
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECONNREFUSED)
        }
        return socket
    }
}
