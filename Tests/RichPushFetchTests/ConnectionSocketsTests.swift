import Testing

@testable import RichPushFetch

@Suite("Connection sockets: a reused connection's socket found by its ends")
struct ConnectionSocketsTests {
    static func ends(_ localPort: Int, remote: String = "127.0.0.1") -> ConnectionSockets.Ends {
        .init(local: "127.0.0.1", localPort: localPort, remote: remote, remotePort: 8080)
    }

    @Test("a connection is found by both its ends, and only by them")
    func lookup() {
        let sockets = ConnectionSockets()
        sockets.record(7, ends: Self.ends(40000))
        #expect(sockets.socket(of: Self.ends(40000)) == 7)
        // The same local port towards another peer is another connection.
        #expect(sockets.socket(of: Self.ends(40000, remote: "127.0.0.3")) == nil)
        #expect(sockets.socket(of: Self.ends(40001)) == nil)
    }

    @Test("a socket number recorded again forgets the closed connection it had, and the record stays bounded")
    func reusedSocketNumber() {
        let sockets = ConnectionSockets()
        sockets.record(7, ends: Self.ends(40000))
        sockets.record(7, ends: Self.ends(40001))
        #expect(sockets.socket(of: Self.ends(40000)) == nil)
        #expect(sockets.socket(of: Self.ends(40001)) == 7)
        for port in 0..<1000 { sockets.record(Int32(9 + port % 3), ends: Self.ends(41000 + port)) }
        #expect(sockets.count == 4)
    }

    @Test("ends recorded since under another socket survive their first socket's next connection")
    func endsMovedToAnotherSocket() {
        let sockets = ConnectionSockets()
        sockets.record(7, ends: Self.ends(40000))
        // That connection closed; a new one with the same ends got socket 9, then socket 7 another connection.
        sockets.record(9, ends: Self.ends(40000))
        sockets.record(7, ends: Self.ends(40002))
        #expect(sockets.socket(of: Self.ends(40000)) == 9)
        #expect(sockets.socket(of: Self.ends(40002)) == 7)
    }
}
