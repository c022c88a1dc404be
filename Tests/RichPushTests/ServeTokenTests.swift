import Foundation
import Testing

/// `serve`'s start-up checks of what guards it: the token file (a regular file, private, long enough) and a
/// listener that others can reach without one. Through the binary; every run bounded by timeout(1).
@Suite struct ServeTokenTests {
    /// A file holding `text`, with `mode`; its path.
    static func tokenFile(_ text: String, mode: Int) throws -> String {
        let file = NSTemporaryDirectory() + "serve-token-\(UUID().uuidString)"
        #expect(
            FileManager.default.createFile(
                atPath: file, contents: Data(text.utf8), attributes: [.posixPermissions: mode]))
        return file
    }

    /// `richpush serve` with `arguments`, ended by timeout(1) after `seconds` (status 124 then).
    static func serve(_ arguments: [String], seconds: Int = 30) async throws -> CLI.Run {
        try await offPool {
            try CLI.runBlocking(["serve"] + arguments, stdin: nil, prefix: ["/usr/bin/timeout", String(seconds)])
        }
    }

    @Test("a token file that is a FIFO, a directory or a device is refused at once, never waited on")
    func notRegular() async throws {
        let fifo = NSTemporaryDirectory() + "serve-token-fifo-\(UUID().uuidString)"
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        for (path, kind) in [(fifo, "a FIFO"), (NSTemporaryDirectory(), "a directory"), ("/dev/zero", "a device")] {
            let run = try await Self.serve(["--listen", "127.0.0.1:0", "--token-file", path])
            #expect(run.status == 64, "\(path): status \(run.status) (124: it waited)")
            #expect(run.stderr.contains("--token-file: '\(path)' is not a regular file (\(kind))"), "\(run.stderr)")
        }
    }

    @Test("a token shorter than 16 bytes is refused, and the message shows none of it")
    func short() async throws {
        let file = try Self.tokenFile("tooshort-123456\n", mode: 0o600)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let run = try await Self.serve(["--listen", "127.0.0.1:0", "--token-file", file])
        #expect(run.status == 64)
        #expect(run.stderr.contains("the token in '\(file)' is 15 bytes; at least 16 are required"), "\(run.stderr)")
        #expect(!run.stderr.contains("tooshort"))
    }

    @Test("a token file group or others can read is used, with a warning that names it and its mode")
    func readableByOthers() async throws {
        let bed = try TestBed()
        let secret = "0123456789abcdef-readable"
        let file = try Self.tokenFile(secret + "\n", mode: 0o644)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let server = try await ServeProcess(bed.cliOptions + ["--token-file", file])
        #expect(server.startup.contains("warning: --token-file '\(file)' can be read by group or others (mode 0644)"))
        #expect(!server.startup.contains(secret))
        let reply = try await server.request(
            "POST", "/v1/enrich", headers: [("Authorization", "Bearer " + secret)],
            body: ServeTests.payload(bed.url("/media/photo.jpg")))
        #expect(reply.status == 200)
        #expect(try await server.terminate() == 0)
    }

    @Test("--listen on an address others can reach, without a token: a warning naming it; with one, none")
    func exposedWithoutToken() async throws {
        // 192.0.2.1 (TEST-NET-1) is no address of this host: the warning comes before the listener fails, and
        // nothing is ever exposed.
        let bare = try await Self.serve(["--listen", "192.0.2.1:8080"])
        #expect(bare.status == 70)
        #expect(
            bare.stderr.contains(
                "warning: --listen 192.0.2.1:8080 is not a loopback address and no --token-file is given"))
        let file = try Self.tokenFile("0123456789abcdef0123\n", mode: 0o600)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let guarded = try await Self.serve(["--listen", "192.0.2.1:8080", "--token-file", file])
        #expect(guarded.status == 70)
        #expect(!guarded.stderr.contains("warning"), "\(guarded.stderr)")
        // A loopback address, IPv4 or IPv6, is no exposure: only the other one is named.
        for address in ["127.0.0.2:0", "[::1]:0"] {
            let run = try await Self.serve(["--listen", address, "--listen", "192.0.2.1:8080"])
            #expect(run.stderr.contains("warning: --listen 192.0.2.1:8080 is not a loopback address"))
            #expect(!run.stderr.contains("--listen \(address) is not"), "\(run.stderr)")
        }
    }
}
