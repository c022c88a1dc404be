import Foundation
import Testing

@testable import RichPushWorker

@Suite("Test support: the tests' redis-server")
struct RedisServerTests {
    @Test(
        """
        a port taken between its choice and redis-server's bind (by another test's server, or anything listening) is \
        replaced by another, and the server found at the port is the test's own
        """,
        .offPool)
    func portTaken() throws {
        let first = try RedisServer()
        let silent = try SilentListener()
        // The ports another process took first: a redis-server (which would answer a PING at its port as if it
        // were the new one) and a listener that never answers.
        let second = try RedisServer(ports: [first.port, silent.port])
        #expect(![first.port, silent.port].contains(second.port))
        // Over TCP at its port: the second server, by its directory, not the first.
        let tcp = RedisConnection(try RedisAddress(parsing: second.url), timeout: .seconds(5))
        let directory = try tcp.run(["CONFIG", "GET", "dir"]).elements.last?.text ?? ""
        #expect(directory.hasSuffix(URL(fileURLWithPath: second.directory).lastPathComponent))
        try second.client().run(["SET", "only-in", "second"])
        #expect(try first.client().run(["EXISTS", "only-in"]) == .integer(0))
    }
}
