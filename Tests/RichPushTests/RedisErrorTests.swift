import Foundation
import Testing

@testable import RichPushWorker

/// `RedisError.Code`: what failed, typed in one place, from an error reply's first word or from how the connection
/// failed; checked on the texts Redis sends and against a real server.
@Suite("Worker: Redis errors, classified by their code")
struct RedisErrorTests {
    @Test(
        """
        an error reply's first word is its code, and the code says what the failure means: the server not ready yet \
        (LOADING, BUSY, READONLY, MASTERDOWN) is waited out
        """,
        arguments: [
            ("NOGROUP No such key 'in' or consumer group 'g' in XREADGROUP with GROUP option", .noGroup, .reply),
            ("BUSYGROUP Consumer Group name already exists", .busyGroup, .reply),
            ("NOAUTH Authentication required.", .noAuth, .authentication),
            ("WRONGPASS invalid username-password pair or user is disabled.", .wrongPass, .authentication),
            ("NOPERM User alice has no permissions to run the 'xinfo|consumers' command", .noPerm, .reply),
            ("READONLY You can't write against a read only replica.", .readOnly, .unavailable),
            ("LOADING Redis is loading the dataset in memory", .loading, .unavailable),
            (
                "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.", .busy,
                .unavailable
            ),
            (
                "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.", .masterDown,
                .unavailable
            ),
            (
                "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist", .misconf,
                .reply
            ),
            ("OOM command not allowed when used memory > 'maxmemory'.", .outOfMemoryOnServer, .reply),
            ("NOSCRIPT No matching script. Please use EVAL.", .noScript, .reply),
            ("WRONGTYPE Operation against a key holding the wrong kind of value", .wrongType, .reply),
            ("ERR no such key", .noSuchKey, .reply),
            ("ERR unknown command 'NOPE', with args beginning with: ", .err, .reply),
            ("ERR AUTH <password> called without any password configured for the default user.", .err, .reply),
            ("CROSSSLOT Keys in request don't hash to the same slot", .other("CROSSSLOT"), .reply),
            // The code is the word as sent: Redis writes codes in capitals.
            ("nogroup no such group", .other("nogroup"), .reply),
            ("", .other(""), .reply),
        ] as [(String, RedisError.Code, RedisError.Kind)])
    func replies(message: String, code: RedisError.Code, kind: RedisError.Kind) {
        let error = RedisError(reply: message)
        #expect(error.code == code)
        #expect(error.kind == kind)
        #expect(error.waitedOut == (kind == .unavailable), "at the start, only a server not ready yet is waited out")
        #expect(error.description == message, "the server's text is kept whole")
    }

    @Test("a real server's replies: each refusal the worker acts on has its code")
    func server() throws {
        let redis = try RedisServer()
        let client = redis.client()
        func code(_ arguments: [String]) -> RedisError.Code? {
            do {
                try client.run(arguments)
                return nil
            } catch {
                #expect(!error.connection, "\(arguments): \(error.description)")
                return error.code
            }
        }
        _ = try redis.add("in", [("payload", "p")])
        #expect(code(["XINFO", "GROUPS", "missing"]) == .noSuchKey)
        #expect(code(["XREADGROUP", "GROUP", "g", "c", "STREAMS", "in", ">"]) == .noGroup)
        #expect(code(["XGROUP", "CREATE", "in", "g", "0"]) == nil)
        #expect(code(["XGROUP", "CREATE", "in", "g", "0"]) == .busyGroup)
        #expect(code(["GET", "in"]) == .wrongType)
        #expect(code(["NOPE"]) == .err)
        #expect(code(["EVALSHA", String(repeating: "0", count: 40), "0"]) == .noScript)
        // The connection is still good after each refusal.
        #expect(try client.run(["PING"]) == .status("PONG"))
        // A replica refuses writes.
        let replica = try RedisServer(arguments: ["--replicaof", "127.0.0.1", String(redis.port)])
        let refused = #expect(throws: RedisError.self) { try replica.client().run(["XADD", "in", "*", "k", "v"]) }
        #expect(refused?.code == .readOnly)
        #expect(refused?.kind == .unavailable)
    }

    @Test("credentials: NOAUTH and WRONGPASS are authentication failures, whatever the command")
    func credentials() throws {
        let redis = try RedisServer(password: "right-password")
        var address = try RedisAddress(parsing: redis.url)
        let without = RedisConnection(address, timeout: .seconds(5))
        let missing = #expect(throws: RedisError.self) { try without.run(["PING"]) }
        #expect(missing?.code == .noAuth)
        #expect(missing?.kind == .authentication)
        address.password = Array("wrong-password".utf8)
        let wrongly = RedisConnection(address, timeout: .seconds(5))
        let wrong = #expect(throws: RedisError.self) { try wrongly.run(["PING"]) }
        #expect(wrong?.code == .wrongPass)
        #expect(wrong?.kind == .authentication)
        #expect(wrong?.description.contains("wrong-password") == false, "the password is never repeated")
    }

    @Test("connection failures have their own codes: nothing listening, the server closing, a malformed reply")
    func connection() throws {
        let refusing = try RefusingPort()
        let nobody = try RedisAddress(parsing: "redis://127.0.0.1:\(refusing.port)")
        let nowhere = RedisConnection(nobody, timeout: .seconds(5))
        let refused = #expect(throws: RedisError.self) { try nowhere.run(["PING"]) }
        #expect(refused?.code == .connectFailed)
        #expect(refused?.kind == .connection)
        let redis = try RedisServer()
        // Over TCP, not the unix socket the tests' clients use: there, the PING written after the server closed the
        // socket raises SIGPIPE, which the test process does not ignore (the worker does), and the process died of
        // it. Over TCP the first write after the server's FIN is taken, and only the read fails.
        let client = RedisConnection(try RedisAddress(parsing: redis.url), timeout: .seconds(5))
        // The server closes this client's connection once it has answered (CLIENT KILL of itself).
        _ = try? client.run(["CLIENT", "KILL", "SKIPME", "no"])
        let closed = #expect(throws: RedisError.self) { try client.run(["PING"]) }
        // `closed` when the client reads the server's FIN first, `io` (connection reset) when the PING written after
        // it drew a RST first: seen both ways in six runs. Either is the connection's failure, never a reply.
        #expect(closed.map { [.closed, .io].contains($0.code) } == true, "\(String(describing: closed))")
        #expect(closed?.kind == .connection)
        // The connection is made again at the next command.
        #expect(try client.run(["PING"]) == .status("PONG"))
        var cut = RESPReader(ChunkedSource(bytes: Array("*1\r\n*2\r\n$2\r\nin".utf8), chunk: 4), bufferSize: 0)
        let ended = #expect(throws: RedisError.self) { try cut.streamsReply(payloadLimit: 10, most: 1) }
        #expect(ended?.code == .closed)
        var malformed = RESPReader(ChunkedSource(bytes: Array("?\r\n".utf8), chunk: 4), bufferSize: 0)
        let violation = #expect(throws: RedisError.self) { try malformed.streamsReply(payloadLimit: 10, most: 1) }
        #expect(violation?.code == .protocolViolation)
    }
}
