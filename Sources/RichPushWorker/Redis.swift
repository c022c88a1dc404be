#if canImport(Glibc)
    import Glibc
#endif
import CHiredis

/// A Redis reply, copied out of hiredis's.
package enum RedisValue: Sendable, Equatable {
    case string([UInt8])
    case integer(Int)
    case array([RedisValue])
    case null
    case status(String)
    case error(String)

    /// The text of a string or status reply.
    package var text: String? {
        switch self {
        case .string(let bytes): return String(decoding: bytes, as: UTF8.self)
        case .status(let text): return text
        default: return nil
        }
    }

    package var elements: [RedisValue] {
        if case .array(let elements) = self { return elements }
        return []
    }
}

/// A Redis command failed: the connection (`connection`: it is then dropped and made again at the next
/// command), or the server refused the command (its error reply).
package struct RedisError: Error, CustomStringConvertible {
    package let description: String
    package let connection: Bool
}

/// Where the Redis server is: `redis://[:password@]HOST:PORT[/DB]` or `unix:///path/to/socket`.
package struct RedisAddress: Sendable, CustomStringConvertible {
    package var host: String
    /// 0 for a unix socket (`host` is then its path).
    package var port: Int
    package var password: String?
    package var database = 0

    package init?(_ url: String) {
        if url.hasPrefix("unix://") {
            let path = String(url.dropFirst("unix://".count))
            guard path.hasPrefix("/"), path.count > 1 else { return nil }
            host = path
            port = 0
            return
        }
        guard url.hasPrefix("redis://") else { return nil }
        var rest = Substring(url.dropFirst("redis://".count))
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            // Only a password (`:secret@`), as Redis before ACLs; a user name is not supported.
            guard credentials.hasPrefix(":"), credentials.count > 1 else { return nil }
            password = String(credentials.dropFirst())
            rest = rest[rest.index(after: at)...]
        }
        if let slash = rest.firstIndex(of: "/") {
            guard let number = Int(rest[rest.index(after: slash)...]), number >= 0, number <= 10_000 else { return nil }
            database = number
            rest = rest[..<slash]
        }
        guard let colon = rest.lastIndex(of: ":"), let port = Int(rest[rest.index(after: colon)...]), (1...65535).contains(port),
            colon > rest.startIndex
        else { return nil }
        host = String(rest[..<colon])
        self.port = port
    }

    /// The address without its password.
    package var description: String { port == 0 ? "unix://\(host)" : "redis://\(host):\(port)/\(database)" }
}

/// One blocking connection to Redis, used by one thread at a time; made (with AUTH and SELECT) at the first
/// command, and made again at the command after one that failed on the connection.
package final class RedisConnection: @unchecked Sendable {
    private let address: RedisAddress
    private let timeoutMilliseconds: Int32
    private var context: UnsafeMutablePointer<redisContext>?

    /// A connection to `address`; `timeout` bounds connecting and every command's reply (a blocking read must
    /// ask for less).
    package init(_ address: RedisAddress, timeout: Duration) {
        self.address = address
        timeoutMilliseconds = Int32(clamping: timeout.inMilliseconds)
    }

    deinit { drop() }

    /// Runs one command; a server error reply is thrown (not a connection error).
    @discardableResult
    package func run(_ arguments: [String]) throws(RedisError) -> RedisValue {
        try run(bytes: arguments.map { Array($0.utf8) })
    }

    /// Runs one command with binary-safe arguments.
    @discardableResult
    package func run(bytes arguments: [[UInt8]]) throws(RedisError) -> RedisValue {
        let context = try connected()
        let reply = Self.send(context, arguments)
        guard let reply else {
            let reason = Self.reason(context)
            drop()
            throw RedisError(description: "redis \(address): \(reason)", connection: true)
        }
        if case .error(let message) = reply { throw RedisError(description: message, connection: false) }
        return reply
    }

    /// Closes the connection; the next command makes a new one.
    package func drop() {
        if let context { redisFree(context) }
        context = nil
    }

    private func connected() throws(RedisError) -> UnsafeMutablePointer<redisContext> {
        if let context { return context }
        guard let made = chiredis_connect(address.host, Int32(address.port), timeoutMilliseconds) else {
            throw RedisError(description: "redis \(address): out of memory", connection: true)
        }
        guard made.pointee.err == 0 else {
            let reason = Self.reason(made)
            redisFree(made)
            throw RedisError(description: "redis \(address): \(reason)", connection: true)
        }
        context = made
        do throws(RedisError) {
            if let password = address.password { try run(["AUTH", password]) }
            if address.database != 0 { try run(["SELECT", String(address.database)]) }
        } catch {
            drop()
            throw RedisError(description: "redis \(address): \(error.description)", connection: true)
        }
        return made
    }

    private static func reason(_ context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: context.pointee.errstr) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    private static func send(_ context: UnsafeMutablePointer<redisContext>, _ arguments: [[UInt8]]) -> RedisValue? {
        let copies = arguments.map { argument in
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(argument.count, 1))
            argument.withUnsafeBytes { bytes in
                if let base = bytes.baseAddress { UnsafeMutableRawPointer(buffer).copyMemory(from: base, byteCount: bytes.count) }
            }
            return UnsafePointer(buffer)
        }
        defer { for copy in copies { copy.deallocate() } }
        var pointers: [UnsafePointer<CChar>?] = copies
        let lengths = arguments.map(\.count)
        guard let reply = chiredis_command(context, Int32(arguments.count), &pointers, lengths) else { return nil }
        defer { freeReplyObject(reply) }
        return value(reply)
    }

    private static func value(_ reply: UnsafeMutablePointer<redisReply>) -> RedisValue {
        let reply = reply.pointee
        func bytes() -> [UInt8] {
            guard let text = reply.str else { return [] }
            return Array(UnsafeRawBufferPointer(start: text, count: Int(reply.len)))
        }
        switch reply.type {
        case REDIS_REPLY_STRING: return .string(bytes())
        case REDIS_REPLY_INTEGER: return .integer(Int(reply.integer))
        case REDIS_REPLY_NIL: return .null
        case REDIS_REPLY_STATUS: return .status(String(decoding: bytes(), as: UTF8.self))
        case REDIS_REPLY_ERROR: return .error(String(decoding: bytes(), as: UTF8.self))
        case REDIS_REPLY_ARRAY:
            return .array((0..<Int(reply.elements)).map { value(reply.element[$0]!) })
        default: return .null
        }
    }
}
