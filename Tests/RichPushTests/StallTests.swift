import FixtureOrigin
import Foundation
import Testing

@testable import RichPush

/// A name server that never answers: a UDP socket bound to port 53 of a loopback address of its own, which
/// nobody reads. Queries to it get no reply and no ICMP error, so a resolver waits out its whole timeout.
final class SilentNameServer {
    let address: String
    private let descriptor: Int32

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw SilentNameServerError(what: "socket", code: errno) }
        // Any address of 127/8 is this host's; pick one no other test binds (port 53 needs root, as tests run).
        for last in 2...250 {
            let candidate = "127.53.0.\(last)"
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(53).bigEndian
            inet_pton(AF_INET, candidate, &address.sin_addr)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            if bound == 0 {
                self.descriptor = descriptor
                self.address = candidate
                return
            }
        }
        close(descriptor)
        throw SilentNameServerError(what: "bind 127.53.0.x:53", code: errno)
    }

    deinit { close(descriptor) }

    /// A command prefix that runs a program with `/etc/resolv.conf` naming only this server, in a mount
    /// namespace of its own (the file is bind-mounted there; nothing outside the namespace changes).
    func resolverPrefix(directory: String) throws -> [String] {
        let path = directory + "/resolv.conf"
        // One attempt of 30 s: without quick exit, the loop would be held that long.
        try "nameserver \(address)\noptions timeout:30 attempts:1\n".write(toFile: path, atomically: true, encoding: .utf8)
        let script = #"mount --bind "$0" /etc/resolv.conf && exec "$@""#
        return ["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script, path]
    }
}

struct SilentNameServerError: Error {
    let what: String
    let code: Int32
}

@Suite("The fetch loop never blocks")
struct StallTests {
    @Test("a name that never resolves expires at its deadline; a payload in flight beside it is unharmed")
    func silentNameServer() async throws {
        let bed = try TestBed()
        let server = try SilentNameServer()
        let directory = NSTemporaryDirectory() + "richpush-resolv-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let prefix = try server.resolverPrefix(directory: directory)
        func payload(_ url: String) -> String { #"{"aps":{"mutable-content":1},"adb_media":"\#(url)"}"# }
        // Two at a time: the unresolvable one, and a slow one that ends at 1.5 s; the third starts then and is
        // in flight when the first expires at 2 s (the moment a blocking removal would have held the loop).
        let lines = [
            payload("http://silent.test:\(bed.origin.port)/media/photo.jpg"),
            payload(bed.url("/slow/photo.jpg?ms=1500")),
            payload(bed.url("/slow/logo.png?ms=1000")),
        ]
        let start = ContinuousClock.now
        let run = try await offPool {
            try CLI.runBlocking(
                ["stream", "--deadline", "2", "--concurrency", "2"] + bed.cliOptions, stdin: lines.joined(separator: "\n"),
                prefix: prefix)
        }
        let wall = ContinuousClock.now - start
        #expect(run.status == 0, "\(run.stderr)")
        let outcomes = run.lines.map { $0["outcome"] as? String }
        #expect(outcomes == ["expired", "complete", "complete"], "\(run.stdout)")
        // Without the fix the first result comes when the resolver gives up, at 30 s.
        let elapsed = (run.lines.first?["elapsed_ms"] as? Double) ?? .infinity
        #expect(elapsed < 2000 + 8000, "the unresolvable payload's result came after \(elapsed) ms")
        #expect(wall < .seconds(20), "the stream took \(wall)")
        // Unharmed: the others finished within their own 2 s deadline (a held loop delivers them late).
        for line in run.lines.dropFirst() {
            let elapsed = (line["elapsed_ms"] as? Double) ?? .infinity
            #expect(elapsed < 2000, "\(line["input"] ?? "?") took \(elapsed) ms")
        }
    }
}
