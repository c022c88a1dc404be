import CHiredis

/// A Redis command failed: on the connection (it is then dropped and made again at the next command), at
/// authentication (a wrong password or user, or none given to a server that requires one), the server not ready to
/// serve yet (loading, busy, a replica), or the server refused the command (its error reply).
///
/// What failed is a typed `code`, decided in one place: an error reply's first word (`Code(reply:)`, where Redis
/// puts its error's code), or how the connection failed (`Code(hiredis:connecting:)`, and the reply reader's own
/// failures). Nothing reads an error's text to decide what to do.
package struct RedisError: Error, CustomStringConvertible {
    /// What the failure means for the caller.
    package enum Kind: Sendable, Equatable {
        /// The connection failed: an outage, waited out.
        case connection
        /// The credentials are wrong or missing: a mistake in the command line, not an outage.
        case authentication
        /// The server answered that it cannot serve now, in a state it leaves by itself (`Code.isUnavailable`): waited
        /// out, as an outage is.
        case unavailable
        /// The server refused the command.
        case reply
    }

    /// What failed: the code of the server's error reply, or how the connection failed.
    package enum Code: Sendable, Hashable {
        // The server's answer: its error reply's first word.
        /// `ERR`: Redis's generic error (a wrong argument, an unknown command, ...).
        case err
        /// `ERR no such key`: a command that needs the key (XINFO, RENAME) found none. The one generic error told
        /// apart, by its whole text, here.
        case noSuchKey
        /// `NOGROUP`: no such consumer group (or no such stream, for XREADGROUP and XACK).
        case noGroup
        /// `BUSYGROUP`: XGROUP CREATE of a group that exists.
        case busyGroup
        /// `NOAUTH`: the server requires AUTH first.
        case noAuth
        /// `WRONGPASS`: AUTH refused: a wrong password, or a user that does not exist or is disabled (Redis 6).
        case wrongPass
        /// `NOPERM`: the ACL user may not run this command or touch this key.
        case noPerm
        /// `READONLY`: a write sent to a replica (a failover moved the primary).
        case readOnly
        /// `LOADING`: the server is loading its data set after a restart.
        case loading
        /// `BUSY`: a script has run past `lua-time-limit`.
        case busy
        /// `MASTERDOWN`: a replica that serves no stale data lost its link to the primary.
        case masterDown
        /// `MISCONF`: writes refused because the last snapshot failed.
        case misconf
        /// `OOM`: `maxmemory` reached.
        case outOfMemoryOnServer
        /// `NOSCRIPT`: EVALSHA of a script the server does not hold.
        case noScript
        /// `WRONGTYPE`: the key holds another type (a stream key that is a string).
        case wrongType
        /// Any other code, as the server sent it.
        case other(String)
        // The connection.
        /// The connection could not be made (refused, no such host or socket).
        case connectFailed
        /// Reading or writing failed (reset, or a socket's own timeout).
        case io
        /// A reply did not come in time: not whole within the command timeout (hiredis's commands), or not 64 KiB of
        /// it within each (the entries' reader).
        case replyTimedOut
        /// The server closed the connection.
        case closed
        /// A reply malformed, or out of step with the command.
        case protocolViolation
        /// The client could not allocate.
        case outOfMemory

        /// The codes of error replies, by the word Redis starts the reply with.
        private static let replyCodes: [Substring: Code] = [
            "ERR": .err, "NOGROUP": .noGroup, "BUSYGROUP": .busyGroup, "NOAUTH": .noAuth, "WRONGPASS": .wrongPass,
            "NOPERM": .noPerm, "READONLY": .readOnly, "LOADING": .loading, "BUSY": .busy, "MASTERDOWN": .masterDown,
            "MISCONF": .misconf, "OOM": .outOfMemoryOnServer, "NOSCRIPT": .noScript, "WRONGTYPE": .wrongType,
        ]

        /// The code of an error reply: its first word (Redis's convention since 2.6: `-NOGROUP No such key ...`).
        package init(reply message: String) {
            if message.hasPrefix("ERR no such key") {
                self = .noSuchKey
                return
            }
            let word = message.prefix { $0 != " " }
            self = Self.replyCodes[word] ?? .other(String(word))
        }

        /// How hiredis's context failed (its `err`): making the connection, or on a command.
        init(hiredis error: Int32, connecting: Bool) {
            switch error {
            case _ where connecting: self = .connectFailed
            case 3: self = .closed  // REDIS_ERR_EOF
            case 4: self = .protocolViolation  // REDIS_ERR_PROTOCOL
            case 5: self = .outOfMemory  // REDIS_ERR_OOM
            case CHIREDIS_ERR_REPLY_TIMEOUT: self = .replyTimedOut
            default: self = .io  // REDIS_ERR_IO, REDIS_ERR_OTHER
            }
        }

        /// Whether the connection failed, rather than the server answering.
        package var isConnection: Bool {
            switch self {
            case .connectFailed, .io, .replyTimedOut, .closed, .protocolViolation, .outOfMemory: return true
            default: return false
            }
        }

        /// Whether the server answered that it cannot serve now, in a state it leaves by itself: loading its data
        /// set after a restart (`LOADING`, until the load ends), running a script past its limit (`BUSY`, until the
        /// script ends or is killed), a replica (`READONLY`: a failover or the operator promotes it, or the address
        /// soon leads to the new primary), a replica cut from its primary (`MASTERDOWN`, until the link is back).
        /// Not `OOM` or `MISCONF`, which wait for an operator, nor `NOPERM` or `NOGROUP`, which are the command
        /// line's to fix.
        package var isUnavailable: Bool {
            switch self {
            case .loading, .busy, .readOnly, .masterDown: return true
            default: return false
            }
        }

        /// What the failure means: a connection's, the credentials' (NOAUTH, WRONGPASS), the server not ready
        /// (`isUnavailable`), else the server refused.
        package var kind: Kind {
            if isConnection { return .connection }
            if isUnavailable { return .unavailable }
            return self == .noAuth || self == .wrongPass ? .authentication : .reply
        }
    }

    /// What failed, with the server's or the system's words.
    package let detail: String
    package let code: Code
    package let kind: Kind

    /// A failure of `code`, meaning what its code means (`Code.kind`) unless `kind` says otherwise (an AUTH refused
    /// with `ERR`, by a Redis before 6, is an authentication failure).
    package init(_ code: Code, kind: Kind? = nil, detail: String) {
        self.code = code
        self.kind = kind ?? code.kind
        self.detail = detail
    }

    /// The server's error reply, `message` as it sent it (its code first).
    package init(reply message: String) {
        self.init(Code(reply: message), detail: message)
    }

    package var description: String { detail }

    /// Whether the connection failed (an outage: waited out), not the server's answer.
    package var connection: Bool { kind == .connection }

    /// The detail of a reply that did not come in time (`SocketSource`, `chiredis_command`).
    static let replyTimeout = CHIREDIS_REPLY_TIMEOUT

    /// Whether the failure is waited out with the backoff, at the start as later: the connection failed, or the server
    /// is not ready to serve yet (`Kind.unavailable`). Anything else at the start is a mistake to report.
    package var waitedOut: Bool { kind == .connection || kind == .unavailable }
}
