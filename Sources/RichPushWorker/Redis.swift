import CHiredis
import RichPush

#if canImport(Glibc)
    import Glibc
#endif

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

/// Where the Redis server is and who to be there: `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]` or
/// `unix:///path/to/socket`, read as RFC 3986 says (the user and password percent-decoded), with Redis's
/// conventions: port 6379 when none is given, an empty user for the default user (`AUTH password`), a named one
/// for a Redis 6 ACL user (`AUTH user password`).
package struct RedisAddress: Sendable, CustomStringConvertible {
    package var host: String
    /// 0 for a unix socket (`host` is then its path).
    package var port: Int
    /// A Redis 6 ACL user; nil for the default user.
    package var user: [UInt8]?
    package var password: [UInt8]?
    package var database = 0

    /// A URL that is not one of the two forms. Its message never repeats the URL's user or password.
    package struct URLError: Error, CustomStringConvertible {
        /// What is wrong with the URL, with the URL redacted.
        package let detail: String

        package var description: String { detail }
    }

    /// The databases a URL may select: Redis's `databases` setting is 16 by default and rarely more.
    static let databaseRange = 0...10_000

    /// Parses a URL of either form.
    /// - Throws: `URLError` naming what is wrong, with the URL shown as `redacted(_:)` makes it.
    package init(parsing url: String) throws(URLError) {
        func failure(_ reason: String) -> URLError { URLError(detail: "'\(Self.redacted(url))': \(reason)") }
        let forms = "expected redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] or unix:///path/to/socket"
        guard let (scheme, rest) = Self.split(url) else { throw URLError(detail: forms) }
        if scheme == "unix" {
            // redis-py reads `?password=` here; taken as part of the path, it was echoed in every message.
            guard !rest.contains(where: { $0 == "?" || $0 == "#" }) else {
                throw failure(
                    "a '?' or '#' in a unix socket's path must be percent-encoded (%3F, %23): a query is not read "
                        + "(a password goes in --redis-password-file or REDISCLI_AUTH)")
            }
            guard let path = Self.percentDecoded(rest), path.first == UInt8(ascii: "/"), path.count > 1 else {
                throw failure("a unix socket's path must be absolute (unix:///path/to/socket), percent-encoded")
            }
            host = String(decoding: path, as: UTF8.self)
            port = 0
            return
        }
        guard scheme == "redis" else {
            throw scheme == "rediss" ? failure("rediss:// (TLS) is not supported") : URLError(detail: forms)
        }
        // The authority ends at the first '/', '?' or '#'; within it the user information ends at the last '@'.
        let authorityEnd = rest.firstIndex { "/?#".contains($0) } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let tail = rest[authorityEnd...]
        guard !tail.contains("@") else {
            throw failure("a '/', '?' or '#' in the user or password must be percent-encoded (%2F, %3F, %23)")
        }
        var hostAndPort = authority
        if let at = authority.lastIndex(of: "@") {
            let information = authority[..<at]
            hostAndPort = authority[authority.index(after: at)...]
            let colon = information.firstIndex(of: ":")
            guard let user = Self.percentDecoded(information[..<(colon ?? information.endIndex)]),
                let password = Self.percentDecoded(colon.map { information[information.index(after: $0)...] } ?? "")
            else {
                throw failure("a '%' in the user or password must start a percent-encoded byte (%40 for '@')")
            }
            self.user = user.isEmpty ? nil : user
            self.password = password.isEmpty ? nil : password
        }
        var portText: Substring? = nil
        if hostAndPort.hasPrefix("[") {
            guard let close = hostAndPort.firstIndex(of: "]") else { throw failure("an IPv6 address lacks its ']'") }
            host = String(hostAndPort[hostAndPort.index(after: hostAndPort.startIndex)..<close])
            let after = hostAndPort[hostAndPort.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else {
                throw failure("expected ':PORT' after the IPv6 address")
            }
            portText = after.isEmpty ? nil : after.dropFirst()
        } else if let colon = hostAndPort.lastIndex(of: ":") {
            host = String(hostAndPort[..<colon])
            portText = hostAndPort[hostAndPort.index(after: colon)...]
        } else {
            host = String(hostAndPort)
        }
        guard !host.isEmpty else { throw failure("no host") }
        port = 6379
        if let portText, !portText.isEmpty {
            guard let number = Int(portText), (1...65535).contains(number) else {
                throw failure("the port must be a number from 1 to 65535")
            }
            port = number
        }
        guard !tail.contains("?"), !tail.contains("#") else { throw failure("a query or a fragment is not supported") }
        let path = tail.drop { $0 == "/" }
        if !path.isEmpty {
            guard let number = Int(path), Self.databaseRange.contains(number) else {
                throw failure("the database (the path) must be a number from 0 to \(Self.databaseRange.upperBound)")
            }
            database = number
        }
    }

    /// `url` as messages may show it: the user information (up to the last '@') replaced by `***`, and, when there
    /// is none, whatever follows a ':' in the host part and is not a port (a password typed without its '@').
    package static func redacted(_ url: String) -> String {
        guard let (scheme, rest) = split(url) else { return "***" }
        let prefix = scheme + "://"
        if scheme == "unix" {
            // A socket's path has no user information; a query (redis-py's `?password=`) may hold a secret.
            guard let query = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) else { return url }
            return prefix + rest[..<query] + "?***"
        }
        if let at = rest.lastIndex(of: "@") { return prefix + "***" + rest[at...] }
        let authorityEnd = rest.firstIndex { "/?#".contains($0) } ?? rest.endIndex
        if !rest.hasPrefix("["), let colon = rest[..<authorityEnd].lastIndex(of: ":"),
            !rest[rest.index(after: colon)..<authorityEnd].allSatisfy({ $0.isASCII && $0.isNumber })
        {
            return prefix + rest[...colon] + "***" + rest[authorityEnd...]
        }
        return url
    }

    /// The scheme, lowercased (RFC 3986: schemes are case-insensitive), and what follows its `://`; nil without.
    private static func split(_ url: String) -> (scheme: String, rest: Substring)? {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return nil }
        return (url[..<colon].lowercased(), url[url.index(colon, offsetBy: 3)...])
    }

    /// RFC 3986 percent-decoding; nil when a '%' is not followed by two hexadecimal digits.
    static func percentDecoded(_ text: Substring) -> [UInt8]? {
        var bytes: [UInt8] = []
        var utf8 = text.utf8.makeIterator()
        while let byte = utf8.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = utf8.next().flatMap({ hexValue($0, lowercaseOnly: false) }),
                let low = utf8.next().flatMap({ hexValue($0, lowercaseOnly: false) })
            else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    /// The address without its user and password.
    package var description: String {
        if port == 0 { return "unix://\(host)" }
        return "redis://\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)"
    }
}

/// One blocking connection to Redis, used by one thread at a time; made (with AUTH and SELECT) at the first
/// command, and made again at the command after one that failed on the connection (or at authentication).
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
        let reply = Self.send(context, arguments, within: timeoutMilliseconds)
        guard let reply else { throw failure(context) }
        if case .error(let message) = reply { throw failure(RedisError(reply: message)) }
        return reply
    }

    /// The shapes of the replies that bring stream entries.
    package enum EntryReply: Sendable {
        /// XREADGROUP's.
        case streams
        /// XAUTOCLAIM's.
        case autoclaim
    }

    /// Runs a command whose reply brings stream entries (XREADGROUP, XAUTOCLAIM), reading the reply off the socket
    /// as it arrives (`RESPReader`) rather than through hiredis, which would hold each value whole twice: each
    /// entry's payload is kept up to `payloadLimit` bytes (a longer one is only measured), its deadline when short,
    /// and nothing else; more than `most` entries (the command's `COUNT`) is a protocol error.
    package func entries(_ arguments: [String], reply: EntryReply, payloadLimit: Int, most: Int) throws(RedisError)
        -> [StreamEntry]
    {
        try readingEntries(arguments) { reader throws(RedisError) in
            switch reply {
            case .streams: try reader.streamsReply(payloadLimit: payloadLimit, most: most)
            case .autoclaim: try reader.autoclaimReply(payloadLimit: payloadLimit, most: most)
            }
        }
    }

    /// Runs XCLAIM, read as `entries` reads: the entries claimed, nil for each deleted since it was delivered
    /// (Redis 6.2 answers null for it and keeps it pending; Redis 7 leaves it out, and out of the pending entries).
    package func claimedEntries(_ arguments: [String], payloadLimit: Int, most: Int) throws(RedisError)
        -> [StreamEntry?]
    {
        try readingEntries(arguments) { reader throws(RedisError) in
            try reader.claimReply(payloadLimit: payloadLimit, most: most)
        }
    }

    /// Sends `arguments` and reads the reply with `read`, off the socket as it arrives.
    private func readingEntries<Reply>(
        _ arguments: [String], _ read: (inout RESPReader<SocketSource>) throws(RedisError) -> Reply
    ) throws(RedisError) -> Reply {
        let context = try connected()
        let sent = Self.withArguments(arguments.map { Array($0.utf8) }) { count, pointers, lengths in
            chiredis_send(context, count, pointers, lengths) == 0
        }
        guard sent else { throw failure(context) }
        var reader = RESPReader(
            SocketSource(
                descriptor: chiredis_descriptor(context), window: .milliseconds(Int64(timeoutMilliseconds))))
        do throws(RedisError) {
            let reply = try read(&reader)
            // Nothing was pipelined: a byte after the reply means the connection is out of step.
            guard !reader.hasBufferedBytes else {
                throw RESPReader<SocketSource>.protocolError("bytes after the reply")
            }
            return reply
        } catch  where error.connection {
            drop()
            throw RedisError(error.code, detail: "redis \(address): \(error.detail)")
        } catch {
            throw failure(error)
        }
    }

    /// The error for an error reply: a server that requires a password answers every command with NOAUTH until
    /// AUTH succeeds.
    private func failure(_ reply: RedisError) -> RedisError {
        guard reply.code == .noAuth else { return reply }
        return RedisError(.noAuth, detail: "redis \(address): the server requires authentication: \(reply.detail)")
    }

    /// The error for a command that failed on the connection, which is dropped.
    private func failure(_ context: UnsafeMutablePointer<redisContext>) -> RedisError {
        let error = RedisError(
            RedisError.Code(hiredis: context.pointee.err, connecting: false),
            detail: "redis \(address): \(Self.reason(context))")
        drop()
        return error
    }

    /// Closes the connection; the next command makes a new one.
    package func drop() {
        if let context { redisFree(context) }
        context = nil
    }

    private func connected() throws(RedisError) -> UnsafeMutablePointer<redisContext> {
        if let context { return context }
        guard let made = chiredis_connect(address.host, Int32(address.port), timeoutMilliseconds) else {
            throw RedisError(.outOfMemory, detail: "redis \(address): out of memory")
        }
        guard made.pointee.err == 0 else {
            let error = RedisError(
                RedisError.Code(hiredis: made.pointee.err, connecting: true),
                detail: "redis \(address): \(Self.reason(made))")
            redisFree(made)
            throw error
        }
        context = made
        do throws(RedisError) {
            if let password = address.password {
                // `AUTH user password` for an ACL user (Redis 6), `AUTH password` for the default one. Redis's
                // answer never repeats the password.
                do throws(RedisError) {
                    try run(bytes: [Array("AUTH".utf8)] + (address.user.map { [$0] } ?? []) + [password])
                } catch  where !error.waitedOut {
                    // WRONGPASS (Redis 6), or ERR from an older one: the credentials, whatever the code, unless the
                    // server only cannot serve yet.
                    throw RedisError(
                        error.code, kind: .authentication,
                        detail: "redis \(address): authentication failed: \(error.detail)")
                }
            }
            if address.database != 0 {
                do throws(RedisError) {
                    try run(["SELECT", String(address.database)])
                } catch  where error.kind == .reply {
                    throw RedisError(
                        error.code, detail: "redis \(address): SELECT \(address.database): \(error.detail)")
                }
            }
        } catch {
            drop()
            throw error
        }
        return made
    }

    private static func reason(_ context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: context.pointee.errstr) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    private static func send(
        _ context: UnsafeMutablePointer<redisContext>, _ arguments: [[UInt8]], within milliseconds: Int32
    ) -> RedisValue? {
        let reply = withArguments(arguments) { count, pointers, lengths in
            chiredis_command(context, count, pointers, lengths, milliseconds)
        }
        guard let reply else { return nil }
        defer { freeReplyObject(reply) }
        return value(reply)
    }

    /// Calls `body` with `arguments` as hiredis takes them: a count, C pointers, and lengths (binary-safe).
    private static func withArguments<Result>(
        _ arguments: [[UInt8]],
        _ body: (Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>, [Int]) -> Result
    ) -> Result {
        let copies = arguments.map { argument in
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(argument.count, 1))
            argument.withUnsafeBytes { bytes in
                if let base = bytes.baseAddress {
                    UnsafeMutableRawPointer(buffer).copyMemory(from: base, byteCount: bytes.count)
                }
            }
            return UnsafePointer(buffer)
        }
        defer { for copy in copies { copy.deallocate() } }
        var pointers: [UnsafePointer<CChar>?] = copies
        return body(Int32(arguments.count), &pointers, arguments.map(\.count))
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
