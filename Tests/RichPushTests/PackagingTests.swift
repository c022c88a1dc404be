import Foundation
import RichPushTestSupport
import Testing

/// The systemd units and the sysusers.d file in `packaging/systemd/` (installed by `make install`), checked as far
/// as a machine without a running systemd allows: systemd's own verdict on the files, and their command lines run
/// as systemd would run them (its specifiers replaced by the directories systemd would make).
@Suite("The shipped systemd units: valid, and their command lines work as systemd runs them")
struct PackagingTests {
    /// `packaging/systemd/` in the checkout.
    static let directory = (FixtureDirectory.root as NSString).deletingLastPathComponent + "/packaging/systemd"
    static let units = ["richpush.service", "richpush-gc.service", "richpush-gc.timer"]
    /// Where the units expect the binary (`make install` rewrites it for another PREFIX).
    static let installedBinary = "/usr/local/bin/richpush"

    static let hasSystemdAnalyze = FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze")
    static let hasSystemdSysusers = FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-sysusers")

    /// The words of `unit`'s `ExecStart=` after the binary, with systemd's specifiers replaced: `%d` (the
    /// credentials directory) and `%S` (the state directories' base, /var/lib).
    static func command(_ unit: String, credentials: String = "", state: String) throws -> [String] {
        let text = try String(contentsOfFile: directory + "/" + unit, encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("ExecStart=") })
        let words = line.dropFirst("ExecStart=".count).split(separator: " ").map(String.init)
        #expect(words.first == installedBinary)
        return words.dropFirst().map {
            $0.replacingOccurrences(of: "%d", with: credentials).replacingOccurrences(of: "%S", with: state)
        }
    }

    /// The name of the credential `unit` loads (`LoadCredential=NAME:PATH`): the file systemd puts in `%d`.
    static func credential(_ unit: String) throws -> String {
        let text = try String(contentsOfFile: directory + "/" + unit, encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("LoadCredential=") })
        return String(line.dropFirst("LoadCredential=".count).prefix { $0 != ":" })
    }

    /// Runs `program` with `arguments`; its status and what it wrote on both outputs.
    static func run(_ program: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await offPool {
            let finished = try ChildProcess.runToEnd(program, arguments, errors: .mergedIntoOutput)
            return (finished.status, finished.outputText)
        }
    }

    @Test(
        "systemd-analyze verify finds nothing to say about the units (their ExecStart pointed at the built richpush)",
        .enabled(if: hasSystemdAnalyze, "systemd-analyze is not installed (Debian: apt-get install systemd)"))
    func verify() async throws {
        let copies = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: copies) }
        for unit in Self.units {
            let text = try String(contentsOfFile: Self.directory + "/" + unit, encoding: .utf8)
            try Data(text.replacingOccurrences(of: Self.installedBinary, with: CLI.binary).utf8)
                .write(to: URL(fileURLWithPath: copies + "/" + unit))
        }
        let result = try await Self.run("/usr/bin/systemd-analyze", ["verify"] + Self.units.map { copies + "/" + $0 })
        #expect(result.status == 0)
        // It warns (an unknown key, a value it cannot parse) and still exits 0: any output is a finding.
        #expect(result.output.isEmpty, "systemd-analyze verify: \(result.output)")
    }

    @Test(
        "systemd-sysusers makes the user richpush from the shipped file (a dry run on an empty root)",
        .enabled(if: hasSystemdSysusers, "systemd-sysusers is not installed (Debian: apt-get install systemd)"))
    func sysusers() async throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let result = try await Self.run(
            "/usr/bin/systemd-sysusers", ["--dry-run", "--root=" + root, Self.directory + "/richpush.sysusers"])
        #expect(result.status == 0)
        #expect(result.output.contains("Creating user 'richpush'"), "\(result.output)")
    }

    @Test(
        """
        richpush.service's command line serves with the token from the credentials directory and the state \
        directory as its root, as systemd makes them (0400 and 0700); without the token a request is refused
        """)
    func serviceCommandLine() async throws {
        let base = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let (credentials, state) = (base + "/credentials", base + "/lib")
        let token = "a-token-of-thirty-two-characters"
        try FileManager.default.createDirectory(
            atPath: credentials, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o500])
        #expect(
            FileManager.default.createFile(
                atPath: credentials + "/" + (try Self.credential("richpush.service")), contents: Data(token.utf8),
                attributes: [.posixPermissions: 0o400]))
        try FileManager.default.createDirectory(
            atPath: state + "/richpush", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var arguments = try Self.command("richpush.service", credentials: credentials, state: state)
        #expect(arguments.first == "serve")
        // ServeProcess listens on a free loopback port of its own: the unit's address is left out.
        let listen = try #require(arguments.firstIndex(of: "--listen"))
        arguments.removeSubrange(listen...listen + 1)
        let server = try await ServeProcess(Array(arguments.dropFirst()))
        #expect(!server.startup.contains("warning"), "\(server.startup)")
        let payload = Array(#"{"aps":{"alert":"hi","mutable-content":1}}"#.utf8)
        #expect(try await server.request("POST", "/v1/enrich", body: payload).status == 401)
        let reply = try await server.request(
            "POST", "/v1/enrich", headers: [("Authorization", "Bearer " + token)], body: payload)
        #expect(reply.status == 200)
        #expect(try await server.terminate() == 0)
    }

    @Test("richpush-gc.service's command line removes an attachment older than an hour from the state directory")
    func gcCommandLine() async throws {
        let state = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let root = state + "/richpush"
        try FileManager.default.createDirectory(
            atPath: root, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let old = root + "/" + attachmentName()
        try FileManager.default.createDirectory(atPath: old, withIntermediateDirectories: false)
        try makeOld(old)
        let fresh = root + "/" + attachmentName()
        try FileManager.default.createDirectory(atPath: fresh, withIntermediateDirectories: false)
        let run = try await CLI.run(try Self.command("richpush-gc.service", state: state))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "removed 1 attachment directories from \(root)\n")
        #expect(entries(root) == [(fresh as NSString).lastPathComponent])
    }
}
