/// Which socket each of a loop's connections has, found by its addresses: what lets a transfer look at the
/// connection curl chose to reuse for it before its request goes out (`Transfer`'s pre-request check).
///
/// libcurl 7.88 tells a pre-request callback the connection's addresses and ports but not its socket
/// (CURLINFO_ACTIVESOCKET answers -1 until the transfer is done: it reads the handle's last finished connection, which
/// `curl_multi_add_handle` forgets). A transfer knows the sockets it opened itself (CURLOPT_OPENSOCKETFUNCTION), so
/// the first request on a new connection records its socket under the connection's two ends, and a later request
/// that reuses it finds the socket there. A live TCP connection's ends are unique, so a lookup by them finds that
/// connection's socket; entries of closed connections stay until their socket number is recorded again (at most one
/// per socket number the process has used), and are never found, since no live connection has their ends unless it
/// was recorded after them.
///
/// Lives on the loop's thread only.
final class ConnectionSockets {
    /// A connection's two ends, as curl's pre-request callback gives them.
    struct Ends: Hashable {
        /// The local address (curl's text of it) and port.
        var local: String
        var localPort: Int
        /// The peer's address (curl's text of it) and port.
        var remote: String
        var remotePort: Int
    }

    private var sockets: [Ends: Int32] = [:]
    private var ends: [Int32: Ends] = [:]

    /// Records that the connection with `ends` has `socket`, replacing what an earlier connection recorded on the
    /// same socket number.
    func record(_ socket: Int32, ends connection: Ends) {
        // The earlier connection on this socket number is closed; its ends may be recorded since under another.
        if let earlier = ends.updateValue(connection, forKey: socket), sockets[earlier] == socket {
            sockets[earlier] = nil
        }
        sockets[connection] = socket
    }

    /// The socket recorded for the connection with `ends`; nil when none was.
    func socket(of connection: Ends) -> Int32? { sockets[connection] }

    /// How many connections are recorded (for tests of its bound).
    var count: Int { sockets.count }
}

@available(*, unavailable)
extension ConnectionSockets: Sendable {}
