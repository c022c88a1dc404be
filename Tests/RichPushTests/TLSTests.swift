import FixtureOrigin
import Foundation
import Testing

@testable import RichPush
@testable import RichPushCore

/// An https origin on loopback: `openssl s_server -WWW` over the fixture media, or with `responses`,
/// `s_server -HTTP` answering `/NAME` with `responses[NAME]`, a complete HTTP response; with a self-signed
/// certificate for `media.test` made for the test.
final class TLSOrigin: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let port: Int
    let certificate: String
    private let directory: String
    private let server: ChildProcess

    init(responses: [String: String]? = nil) throws {
        directory = try temporaryDirectory()
        certificate = directory + "/cert.pem"
        let key = directory + "/key.pem"
        let make = ChildProcess()
        make.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        make.arguments = [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days", "1",
            "-subj", "/CN=media.test", "-addext", "subjectAltName=DNS:media.test",
        ]
        make.standardError = FileHandle.nullDevice
        make.standardOutput = FileHandle.nullDevice
        try make.run()
        make.waitUntilExit()
        guard make.terminationStatus == 0 else {
            throw Failure(description: "openssl req exited \(make.terminationStatus)")
        }
        for (name, response) in responses ?? [:] {
            try Data(response.utf8).write(to: URL(fileURLWithPath: directory + "/" + name))
        }
        // A free port: let an origin pick one, then hand it over.
        let probe = try HTTPOrigin(handler: { _ in .init() })
        port = probe.port
        probe.stop()
        server = ChildProcess()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        server.arguments = [
            "s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificate, "-key", key,
            responses == nil ? "-WWW" : "-HTTP", "-quiet",
        ]
        server.currentDirectoryURL = URL(
            fileURLWithPath: responses == nil ? FixtureRoutes.fixturesDirectory + "/media" : directory)
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        // Ready when it accepts a connection: a bounded wait (on a thread of its own: see `offPool`).
        for _ in 0..<100 where !Self.accepts(port) { usleep(50_000) }
        guard Self.accepts(port) else { throw Failure(description: "openssl s_server never accepted on port \(port)") }
    }

    deinit {
        // s_server does not end on SIGTERM while it waits for a connection.
        kill(server.processIdentifier, SIGKILL)
        server.waitUntilExit()
        try? FileManager.default.removeItem(atPath: directory)
    }

    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}

@Suite("TLS", .serialized)
struct TLSTests {
    func configuration(_ origin: TLSOrigin, trust: Bool) throws -> Configuration {
        var configuration = Configuration()
        configuration.network.addressPolicy = AddressPolicy(allowed: [CIDRRange("127.0.0.1")!])
        configuration.network.resolve = ["media.test:\(origin.port):127.0.0.1"]
        configuration.network.allowedPorts = [origin.port...origin.port]
        configuration.store = AttachmentStore(root: try temporaryDirectory())
        if trust { configuration.network.caBundle = origin.certificate }
        return configuration
    }

    @Test("https with a private CA given by --ca-bundle")
    func privateCA() async throws {
        let origin = try await offPool { try TLSOrigin() }
        let configuration = try configuration(origin, trust: true)
        defer { try? FileManager.default.removeItem(atPath: configuration.store.root) }
        try await withFetcher(configuration) { fetcher in
            let media = try await fetcher.fetch("https://media.test:\(origin.port)/photo.jpg", timeout: .seconds(10)).get()
            #expect(media.type == .jpeg)
            #expect(media.bytes == fixture("photo.jpg").count)
        }
    }

    @Test("a self-signed certificate is refused as tls without the bundle, leaving nothing")
    func untrusted() async throws {
        let origin = try await offPool { try TLSOrigin() }
        let configuration = try configuration(origin, trust: false)
        defer { try? FileManager.default.removeItem(atPath: configuration.store.root) }
        try await withFetcher(configuration) { fetcher in
            let result = await fetcher.fetch("https://media.test:\(origin.port)/photo.jpg", timeout: .seconds(10))
            guard case .failure(let failure) = result else {
                Issue.record("expected a TLS failure, got \(result)")
                return
            }
            #expect(failure.code == .tls)
            #expect((try? FileManager.default.contentsOfDirectory(atPath: configuration.store.root))?.isEmpty ?? true)
        }
    }

    @Test("a redirect from https to http is blocked-scheme unless http is allowed, and nothing connects over http")
    func redirectToHTTP() async throws {
        let plain = try TestBed()
        let hop = "HTTP/1.0 302 Found\r\nLocation: \(plain.origin.url("/media/photo.jpg"))\r\nContent-Length: 0\r\n\r\n"
        let origin = try await offPool { try TLSOrigin(responses: ["hop": hop]) }
        var configuration = try configuration(origin, trust: true)
        defer { try? FileManager.default.removeItem(atPath: configuration.store.root) }
        configuration.network.allowedPorts = [origin.port...origin.port, plain.origin.port...plain.origin.port]
        let url = "https://media.test:\(origin.port)/hop"
        try await withFetcher(configuration) { refusing in
            let refused = await refusing.fetch(url, timeout: .seconds(10))
            guard case .failure(let failure) = refused else {
                Issue.record("expected blocked-scheme, got \(refused)")
                return
            }
            #expect(failure.code == .blockedScheme)
            #expect(plain.origin.connectionCount == 0)
            // The same redirect is followed once http is allowed: the refusal above was the scheme's.
            configuration.network.allowHTTP = true
            try await withFetcher(configuration) { allowing in
                let media = try await allowing.fetch(url, timeout: .seconds(10)).get()
                #expect(media.type == .jpeg)
                #expect(plain.origin.connectionCount == 1)
            }
        }
    }

    @Test("a certificate for another name is refused as tls")
    func wrongName() async throws {
        let origin = try await offPool { try TLSOrigin() }
        var configuration = try configuration(origin, trust: true)
        configuration.network.resolve = ["other.test:\(origin.port):127.0.0.1"]
        defer { try? FileManager.default.removeItem(atPath: configuration.store.root) }
        try await withFetcher(configuration) { fetcher in
            let result = await fetcher.fetch("https://other.test:\(origin.port)/photo.jpg", timeout: .seconds(10))
            #expect((try? result.get()) == nil)
            if case .failure(let failure) = result { #expect(failure.code == .tls) }
        }
    }
}
