import FixtureOrigin
import Foundation
import Testing

@testable import RichPush

/// Runs the built `richpush` binary.
struct CLI {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        var lines: [[String: Any]] {
            stdout.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }
    }

    static var binary: String {
        let executable =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (executable as NSString).deletingLastPathComponent + "/richpush"
    }

    static func run(_ arguments: [String], stdin: String? = nil) async throws -> Run {
        try await offPool { try runBlocking(arguments, stdin: stdin) }
    }

    /// Runs the CLI with standard error on a pseudo-terminal (script(1)), standard output to the file `output`
    /// and standard input from the file `input` (or none). The run's `stdout` is what the terminal showed.
    static func runOnTerminal(_ arguments: [String], input: String? = nil, output: String) async throws -> Run {
        let quoted = ([binary] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: #"'\''"#) + "'" }
        let command = quoted.joined(separator: " ") + " < '\(input ?? "/dev/null")' > '\(output)'"
        return try await offPool {
            try runBlocking(["-qec", command, "/dev/null"], stdin: nil, prefix: ["/usr/bin/script"], direct: true)
        }
    }

    /// Reads `handle` until a newline, its end, or `limit`, on a thread of its own; what was read.
    static func readLine(_ handle: FileHandle, within limit: Duration) async throws -> String {
        try await offPool {
            let end = ContinuousClock.now + limit
            var line: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !line.contains(0x0A), ContinuousClock.now < end {
                var poller = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 50) >= 0 else { break }
                guard poller.revents != 0 else { continue }
                let count = read(handle.fileDescriptor, &buffer, buffer.count)
                guard count > 0 else { break }
                line += buffer[..<count]
            }
            return String(decoding: line, as: UTF8.self)
        }
    }

    /// Runs the CLI; with `prefix`, through that program (`prlimit ...`), which gets the CLI's path and
    /// arguments after its own, or only `arguments` when `direct`.
    static func runBlocking(_ arguments: [String], stdin: String?, prefix: [String] = [], direct: Bool = false) throws
        -> Run
    {
        let finished = try ChildProcess.runToEnd(
            prefix.first ?? binary,
            prefix.isEmpty ? arguments : Array(prefix.dropFirst()) + (direct ? [] : [binary]) + arguments,
            input: Array((stdin ?? "").utf8))
        return Run(status: finished.status, stdout: finished.outputText, stderr: finished.errorsText)
    }

    /// Starts the CLI with pipes to its standard input and from its standard output (standard error is
    /// discarded), for a test that talks to it while it runs.
    static func start(_ arguments: [String]) throws -> (process: ChildProcess, input: FileHandle, output: FileHandle) {
        let process = ChildProcess(binary, arguments)
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, input.fileHandleForWriting, output.fileHandleForReading)
    }
}

extension TestBed {
    /// The CLI options that reach this bed's origin and store.
    var cliOptions: [String] {
        [
            "--allow-http", "--allow-network", "127.0.0.1/32", "--allow-port", "1024-65535", "--resolve",
            "media.test:\(origin.port):127.0.0.1",
            "--attachments-dir", attachments,
        ]
    }

    /// A fixture payload file rewritten for this bed, in a temporary directory.
    func payloadFile(_ name: String, directory: String) throws -> String {
        let source = FixtureDirectory.payloads + "/" + name
        let text = try String(contentsOfFile: source, encoding: .isoLatin1)
            .replacingOccurrences(of: "http://media.example.com:8787", with: url(""))
        let path = directory + "/" + (name as NSString).lastPathComponent
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        if name.hasPrefix("invalid/") {
            // Keep invalid inputs byte-exact (the bad UTF-8 one must stay bad).
            try FileManager.default.removeItem(atPath: path)
            try FileManager.default.copyItem(atPath: source, toPath: path)
        }
        return path
    }
}

@Suite("CLI: richpush enrich, stream, gc")
struct CLITests {
    @Test("enrich: one result per input in argument order; invalid inputs give exit 1 and do not stop the rest")
    func enrichBatch() async throws {
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let inputs = try [
            bed.payloadFile("adobe-photo.json", directory: directory),
            bed.payloadFile("invalid/not-json.json", directory: directory),
            directory + "/missing.json",
            bed.payloadFile("invalid/bad-utf8.json", directory: directory),
            bed.payloadFile("invalid/too-deep.json", directory: directory),
            bed.payloadFile("invalid/array.json", directory: directory),
            bed.payloadFile("zego-string.json", directory: directory),
            directory,
        ]
        let run = try await CLI.run(["enrich"] + bed.cliOptions + inputs)
        #expect(run.status == 1)
        let lines = run.lines
        #expect(lines.count == inputs.count)
        #expect(lines.map { $0["input"] as? String } == inputs)
        #expect(
            lines.map { $0["outcome"] as? String } == [
                "complete", "invalid", "invalid", "invalid", "invalid", "invalid", "complete", "invalid",
            ])
        let codes = lines.map { (($0["problems"] as? [[String: Any]])?.first?["code"] as? String) ?? "" }
        #expect(codes == ["", "not-json", "unreadable", "invalid-utf8", "too-deep", "not-object", "", "unreadable"])
    }

    @Test("the output contract: every key of every result object, in docs/output.md's order, with its kind of value")
    func outputContract() async throws {
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        let published = try temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: published)
        }
        // Between them these give every optional key: thumbnails with clips (airship), a type hint and a problem
        // (clevertap-mismatch), a route with an id and a URL, a fetch that failed (airship-failed), a route from a
        // convention's keys (route-onesignal-custom), a transformed image (webp-transcoded), an invalid input, an FCM
        // message (a wrapped format, a problem for a platform), a fallback attached (Swrve's, its primary failing);
        // and in a second run, a published attachment.
        let routed = directory + "/routed.json"
        let media = bed.url("/media/logo.png")
        try Data(#"{"aps":{"mutable-content":1},"adb_media":"\#(media)","id":"sale-1","uri":"app://sale"}"#.utf8)
            .write(to: URL(fileURLWithPath: routed))
        let fallback = directory + "/fallback.json"
        let failing = bed.url("/status/404")
        try Data(
            #"{"aps":{"mutable-content":1},"_sw":{"media":{"url":"\#(failing)","fallback_url":"\#(media)"}}}"#.utf8
        )
        .write(to: URL(fileURLWithPath: fallback))
        let inputs =
            try [
                "adobe-photo.json", "airship.json", "clevertap-mismatch.json", "airship-failed.json",
                "route-onesignal-custom.json", "webp-transcoded.json", "invalid/not-json.json", "fcm-v1-message.json",
            ]
            .map { try bed.payloadFile($0, directory: directory) } + [routed, fallback]
        var contract = try OutputContract()
        let run = try await CLI.run(["enrich"] + bed.cliOptions + inputs)
        #expect(run.status == 1)
        let lines = run.stdout.split(separator: "\n")
        try #require(lines.count == inputs.count, "\(run.stdout)\(run.stderr)")
        for (line, input) in zip(lines, inputs) {
            contract.check(try JSONParser().parse(Array(line.utf8)), input: input)
        }
        let publishing = ["--publish-dir", published, "--publish-url", "https://cdn.test/m"]
        let publish = try await CLI.run(["enrich"] + bed.cliOptions + publishing + [inputs[0]])
        #expect(publish.status == 0, "\(publish.stderr)")
        contract.check(try JSONParser().parse(Array(publish.stdout.utf8.dropLast())), input: inputs[0])
        #expect(contract.seen == contract.optional, "optional keys not reached")
        #expect(contract.checked == Set(contract.shapes.keys), "objects of docs/output.md's table no check reached")
    }

    @Test("enrich: exit 0 when every input is a payload, whatever its outcome")
    func enrichAllValid() async throws {
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let inputs = try ["html-as-image.json", "no-media.json", "adobe-video.json"].map {
            try bed.payloadFile($0, directory: directory)
        }
        let run = try await CLI.run(["enrich"] + bed.cliOptions + inputs)
        #expect(run.status == 0)
        #expect(run.lines.map { $0["outcome"] as? String } == ["failed", "unchanged", "complete"])
    }

    @Test(
        """
        results that cannot be written (standard output on /dev/full) exit 74 saying so, for enrich, stream, \
        preflight, explain, render and gc; a reader that has gone (EPIPE) is no failure
        """)
    func resultsLost() async throws {
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let input = try bed.payloadFile("adobe-video.json", directory: directory)
        let payload = try String(contentsOfFile: input, encoding: .utf8).replacingOccurrences(of: "\n", with: "")
        let full = ["/bin/sh", "-c", #"exec "$@" > /dev/full"#, "sh"]
        let template = directory + "/template.json"
        let params = directory + "/params.json"
        try Data(#"{"aps":{"alert":"$(name)"}}"#.utf8).write(to: URL(fileURLWithPath: template))
        try Data(#"{"name":"x"}"#.utf8).write(to: URL(fileURLWithPath: params))
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        for arguments in [
            ["enrich"] + bed.cliOptions + [input], ["stream"] + bed.cliOptions,
            ["preflight"] + bed.cliOptions + [input],
            ["explain", input], ["render", "--template", template, "--params", params],
            ["gc", "--older-than", "0", "--attachments-dir", root],
        ] {
            let run = try await offPool { try CLI.runBlocking(arguments, stdin: payload + "\n", prefix: full) }
            #expect(run.status == 74, "\(arguments[0]): \(run.stderr)")
            #expect(
                run.stderr.contains("cannot write results to standard output: No space left on device"),
                "\(arguments[0]): \(run.stderr)")
        }
        // The reader closes its end at once: the results are not wanted, and that is no error.
        let run = try await offPool {
            try CLI.runBlocking(
                ["stream"] + bed.cliOptions, stdin: String(repeating: payload + "\n", count: 50),
                prefix: ["/bin/bash", "-c", #""$@" | head -c 1 > /dev/null; exit ${PIPESTATUS[0]}"#, "sh"])
        }
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!run.stderr.contains("cannot write results"), "\(run.stderr)")
    }

    @Test(
        """
        an argument that is not UTF-8 is a usage error naming its bytes, nothing done (it was read as another \
        path); gc refuses an empty root as enrich does; explain prints a name that is not a payload on one line
        """)
    func argumentsAsGiven() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The root's name ends in the byte 0xFF, appended by the shell: Foundation's arguments are Strings.
        let script = #"exec "$0" gc --older-than 0 --attachments-dir "$1$(printf '\377')""#
        let run = try await offPool {
            try CLI.runBlocking(
                [CLI.binary, directory + "/root"], stdin: nil, prefix: ["/bin/sh", "-c", script], direct: true)
        }
        #expect(run.status == 64, "\(run.stderr)")
        #expect(run.stderr.contains("argument 5 ('\(directory)/root\\xFF') is not UTF-8"), "\(run.stderr)")
        #expect(run.stdout.isEmpty)
        let empty = try await CLI.run(["gc", "--older-than", "0", "--attachments-dir", ""])
        #expect(empty.status == 64, "\(empty.stderr)")
        #expect(empty.stderr.contains("--attachments-dir: the path is empty"), "\(empty.stderr)")
        let forged = directory + "/bad\n  would attach: public.jpeg"
        try Data("x".utf8).write(to: URL(fileURLWithPath: forged))
        let explained = try await CLI.run(["explain", forged])
        #expect(explained.status == 1)
        #expect(explained.stdout.split(separator: "\n").count == 2, "\(explained.stdout)")
        #expect(!explained.stdout.contains("\n  would attach"), "\(explained.stdout)")
    }

    @Test("enrich --out: an input name of 250 bytes gets its result (the temporary name fits too)")
    func outLongName() async throws {
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let input = try bed.payloadFile("adobe-video.json", directory: directory)
        let long = directory + "/" + String(repeating: "a", count: 245) + ".json"
        try FileManager.default.moveItem(atPath: input, toPath: long)
        try FileManager.default.createDirectory(atPath: directory + "/out", withIntermediateDirectories: false)
        let run = try await CLI.run(["enrich", "--out", directory + "/out"] + bed.cliOptions + [long])
        #expect(run.status == 0, "\(run.stderr)")
        let written = try FileManager.default.contentsOfDirectory(atPath: directory + "/out")
        #expect(written == [(long as NSString).lastPathComponent])
    }

    @Test("enrich --out: an input ending in '.', '..' or '/' is a usage error naming it, before anything runs")
    func outNoName() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for input in [".", "..", "/", directory + "/.."] {
            let run = try await CLI.run(["enrich", "--out", directory, input])
            #expect(run.status == 64, "\(input): \(run.stderr)")
            #expect(
                run.stderr.contains("--out: input '\(input)' ends in no file name to write its result to"),
                "\(run.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        }
    }

    @Test("a relative TMPDIR is named when the default attachments root it makes is refused, by enrich and gc alike")
    func relativeTemporaryDirectory() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environment = ["/usr/bin/env", "-C", directory, "TMPDIR=rel"]
        let said = "'rel/richpush-\(geteuid())' is not an absolute path"
        let cause = "TMPDIR ('rel') is relative, and the default root is $TMPDIR/richpush-<uid>"
        let enriched = try await offPool {
            try CLI.runBlocking(["enrich"], stdin: #"{"aps":{"mutable-content":1}}"#, prefix: environment)
        }
        #expect(enriched.status == 64, "\(enriched.stderr)")
        #expect(enriched.stderr.contains("--attachments-dir: \(said)"), "\(enriched.stderr)")
        #expect(enriched.stderr.contains(cause), "\(enriched.stderr)")
        let collected = try await offPool {
            try CLI.runBlocking(["gc", "--older-than", "0"], stdin: nil, prefix: environment)
        }
        #expect(collected.status == 64, "\(collected.stderr)")
        #expect(collected.stderr.contains("--attachments-dir: \(said); \(cause)"), "\(collected.stderr)")
        #expect(collected.stdout.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        // An escape sequence or a line break in TMPDIR is shown, not sent to the terminal.
        let forged = ["/usr/bin/env", "-C", directory, "TMPDIR=rel\u{1B}[31m\nrichpush gc: forged"]
        let escaped = try await offPool {
            try CLI.runBlocking(["gc", "--older-than", "0"], stdin: nil, prefix: forged)
        }
        #expect(escaped.status == 64, "\(escaped.stderr)")
        #expect(escaped.stderr.contains("TMPDIR ('rel\\u{1B}[31m\\u{A}richpush gc: forged') is relative"))
        #expect(!escaped.stderr.contains("\u{1B}") && escaped.stderr.split(separator: "\n").count == 1)
    }

    @Test("enrich: standard input when no file is named")
    func enrichStdin() async throws {
        let bed = try TestBed()
        let run = try await CLI.run(
            ["enrich"] + bed.cliOptions,
            stdin: #"{"aps":{"mutable-content":1},"adb_media":"\#(bed.url("/media/logo.png"))"}"#)
        #expect(run.status == 0)
        #expect(run.lines.first?["input"] as? String == "-")
        #expect(run.lines.first?["outcome"] as? String == "complete")
    }

    @Test("enrich --out: one file per input, same name, nothing on stdout")
    func enrichOut() async throws {
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        let out = try temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: out)
        }
        let inputs = try ["adobe-photo.json", "invalid/not-json.json"].map {
            try bed.payloadFile($0, directory: directory)
        }
        let run = try await CLI.run(["enrich", "--out", out] + bed.cliOptions + inputs)
        #expect(run.status == 1)
        #expect(run.stdout.isEmpty)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: out).sorted() == ["adobe-photo.json", "not-json.json"])
        let written = try String(contentsOfFile: out + "/adobe-photo.json", encoding: .utf8)
        #expect(written.contains(#""outcome":"complete""#))
    }

    @Test(
        "usage errors exit 64 and name the argument",
        arguments: [
            (["enrich", "--deadline", "soon"], "--deadline"),
            (["enrich", "--deadline", "-1"], "--deadline"),
            (["enrich", "--allow-network", "10.0.0.0/40"], "--allow-network"),
            (["enrich", "--resolve", "media.test:80"], "--resolve"),
            (["enrich", "--resolve", "media.test:80:1.2.3.4,nope"], "--resolve"),
            (["enrich", "--allow-port", "0"], "--allow-port"),
            (["enrich", "--convention", "frobnicator"], "frobnicator"),
            (["enrich", "--convention", "zego,zego"], "zego"),
            (["enrich", "--allow-port", "9000-80"], "--allow-port"),
            (["enrich", "--concurrency", "0"], "--concurrency"),
            (
                ["stream", "--publish-s3", "s3://m", "--publish-url", "http://x", "--s3-existence-check", "ask"],
                "--s3-existence-check: expected one of head, if-none-match"
            ),
            (["enrich", "--frobnicate"], "--frobnicate"),
            (["enrich", "--out", "/nonexistent-dir"], "--out"),
            (["enrich", "--ca-bundle", "/nonexistent.pem"], "--ca-bundle"),
            (["enrich", "--deadline"], "--deadline"),
            (["stream", "file.json"], "file.json"),
            (["gc"], "--older-than"),
            (["frob"], "frob"),
        ])
    func usage(arguments: [String], named: String) async throws {
        let run = try await CLI.run(arguments)
        #expect(run.status == 64)
        #expect(run.stderr.contains(named))
        #expect(run.stdout.isEmpty)
    }

    @Test("--resolve takes several addresses, IPv6 in brackets, as curl does")
    func resolveForms() async throws {
        let run = try await CLI.run(
            ["enrich", "--resolve", "a.test:443:127.0.0.2,[::1]", "--deadline", "0.5"], stdin: #"{"aps":{}}"#)
        #expect(run.status == 0)
        #expect(run.lines.first?["outcome"] as? String == "unchanged")
    }

    @Test("--convention runs only the named conventions, in order")
    func conventionChoice() async throws {
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let input = try bed.payloadFile("two-conventions.json", directory: directory)
        let zegoOnly = try await CLI.run(["enrich", "--convention", "zego"] + bed.cliOptions + [input])
        let conventions = (zegoOnly.lines.first?["attachments"] as? [[String: Any]])?.compactMap {
            $0["convention"] as? String
        }
        #expect(conventions == ["zego"])
        let reversed = try await CLI.run(
            ["enrich", "--convention", "zego", "--convention", "adb_media"] + bed.cliOptions + [input])
        let order = (reversed.lines.first?["attachments"] as? [[String: Any]])?.compactMap {
            $0["convention"] as? String
        }
        #expect(order == ["zego", "adb_media"])
    }

    @Test("two inputs with one output name are a usage error")
    func outCollision() async throws {
        let out = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let run = try await CLI.run(["enrich", "--out", out, "a/x.json", "b/x.json"])
        #expect(run.status == 64)
        #expect(run.stderr.contains("x.json"))
    }

    @Test("an input in the --out directory (or linked there) is a usage error: its result would replace it")
    func outOverInput() async throws {
        let out = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let payload = Data(#"{"aps":{"alert":"hi"}}"#.utf8)
        #expect(FileManager.default.createFile(atPath: out + "/b.json", contents: payload))
        let run = try await CLI.run(["enrich", "--out", out, out + "/b.json"])
        #expect(run.status == 64)
        #expect(run.stderr.contains("would replace it"), "\(run.stderr)")
        #expect(FileManager.default.contents(atPath: out + "/b.json") == payload, "the input was overwritten")
        // The same file, hard-linked from another directory: its output path in DIR is the input itself.
        let elsewhere = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: elsewhere) }
        try #require(link(out + "/b.json", elsewhere + "/b.json") == 0, "link: errno \(errno)")
        let linked = try await CLI.run(["enrich", "--out", out, elsewhere + "/b.json"])
        #expect(linked.status == 64, "\(linked.stderr)")
        #expect(FileManager.default.contents(atPath: out + "/b.json") == payload, "the input was overwritten")
    }

    @Test("each command's --help lists the documented options for it and no others, in their order, with defaults")
    func help() async throws {
        let table = try Self.documentedOptions()
        try #require(table.count >= 26, "docs/cli.md's options table: \(table)")
        let ownTables = [
            "serve": try Self.documentedOptions(under: "## Running the service", in: "docs/service.md"),
            "worker": try Self.documentedOptions(under: "## Workers on Redis Streams", in: "docs/service.md"),
        ]
        try #require(ownTables["serve"]!.count >= 8, "docs/service.md's serve options table: \(ownTables["serve"]!)")
        try #require(
            ownTables["worker"]!.count >= 11, "docs/service.md's worker options table: \(ownTables["worker"]!)")
        let cli = try Self.documentSection("## Commands", in: "docs/cli.md")
        for command in ["enrich", "stream", "explain", "render", "gc", "serve", "worker"] {
            let run = try await CLI.run([command, "--help"])
            #expect(run.status == 0)
            #expect(try await CLI.run(["help", command]).stdout == run.stdout, "help \(command)")
            let entries = Self.helpEntries(run.stdout)
            let shown = entries.map(\.option)
            // The usage as docs/cli.md's block of commands gives it.
            let usage = Self.helpSection("USAGE:", of: run.stdout).joined(separator: " ")
            #expect(cli.contains("\n" + usage + " "), "\(command): docs/cli.md's commands lack '\(usage)'")
            guard command != "render", command != "gc" else {
                // Options told in docs/cli.md's prose about the command.
                for option in shown where option != "--help" {
                    #expect(cli.contains("`\(option)"), "\(command) \(option) is not in docs/cli.md's 'Commands'")
                }
                continue
            }
            let tables = [table.filter { $0.applies(to: command) }] + (ownTables[command].map { [$0] } ?? [])
            #expect(Set(shown) == Set(tables.joined().map(\.option) + ["--help"]), "\(command) --help")
            for rows in tables {
                let documented = rows.map(\.option)
                #expect(
                    shown.filter(documented.contains) == documented, "\(command) --help: not in the documented order")
            }
            for row in tables.joined() {
                guard let entry = entries.first(where: { $0.option == row.option })?.entry else { continue }
                if row.default == "(required)" {
                    #expect(
                        entry.hasSuffix("required)"), "\(command) --help: \(row.option) not marked required: \(entry)")
                    continue
                }
                let shownDefault = entry.firstMatch(of: /default: ([^)]*)\)$/).map { String($0.1) }
                guard let shownDefault else {
                    Issue.record("\(command) --help gives \(row.option) no default: \(entry)")
                    continue
                }
                // A number must be the table's; words must begin the table's cell (which may say more).
                let lead = String(shownDefault.prefix { $0 != "," })
                #expect(
                    Int(row.default) == nil ? row.default.contains(lead) : shownDefault == row.default,
                    "\(row.option): \(shownDefault) vs \(row.default)")
            }
        }
        #expect(try await CLI.run(["--version"]).stdout == RichPushVersion.current + "\n")
        #expect(try await CLI.run(["--help"]).stdout.contains("SUBCOMMANDS"))
    }

    @Test("stream: results in input order, bad lines invalid, blank lines skipped, exit 0")
    func stream() async throws {
        let bed = try TestBed()
        let lines = [
            #"{"aps":{"mutable-content":1},"adb_media":"\#(bed.url("/slow/photo.jpg?ms=600"))"}"#,
            "not json",
            "",
            #"{"aps":{"mutable-content":1},"adb_media":"\#(bed.url("/media/logo.png"))"}"#,
            #"{"aps":{"mutable-content":1}}"#,
            "[]",
        ]
        let run = try await CLI.run(
            ["stream", "--concurrency", "4"] + bed.cliOptions, stdin: lines.joined(separator: "\n"))
        #expect(run.status == 0)
        #expect(run.lines.map { $0["input"] as? String } == ["-:1", "-:2", "-:4", "-:5", "-:6"])
        #expect(
            run.lines.map { $0["outcome"] as? String } == ["complete", "invalid", "complete", "unchanged", "invalid"])
    }

    @Test("stream: a line over the size limit is invalid and the stream goes on")
    func streamLongLine() async throws {
        let bed = try TestBed()
        let long = #"{"x":""# + String(repeating: "a", count: 1 << 20) + #""}"#
        let run = try await CLI.run(["stream"] + bed.cliOptions, stdin: long + "\n" + #"{"aps":{}}"# + "\n")
        #expect(run.status == 0)
        #expect(run.lines.map { $0["outcome"] as? String } == ["invalid", "unchanged"])
        let problem = (run.lines.first?["problems"] as? [[String: Any]])?.first
        #expect(problem?["code"] as? String == "payload-too-large")
    }

    @Test("stream: each result is written as soon as it is due, before input ends")
    func streamIsInteractive() async throws {
        let bed = try TestBed()
        let (process, input, output) = try CLI.start(["stream"] + bed.cliOptions)
        // On an early exit, end of input ends the process; the normal path waits for it off the pool.
        defer { try? input.close() }
        input.write(Data((#"{"aps":{"mutable-content":1},"adb_media":"\#(bed.url("/media/photo.jpg"))"}"# + "\n").utf8))
        // Read the first result while standard input is still open; a bounded wait.
        let line = try await CLI.readLine(output, within: .seconds(10))
        #expect(line.hasSuffix("\n"), "no whole result within 10 s while input stayed open: \(line)")
        #expect(line.contains(#""outcome":"complete""#))
        try input.close()
        try await offPool { process.waitUntilExit() }
        #expect(process.terminationStatus == 0)
    }

    @Test("gc removes attachment directories older than the age, and nothing else")
    func gc() async throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let old = root + "/" + UUID().uuidString.lowercased()
        let fresh = root + "/" + UUID().uuidString.lowercased()
        let foreign = root + "/keep-me"
        for directory in [old, fresh, foreign] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            #expect(FileManager.default.createFile(atPath: directory + "/a.jpg", contents: Data([1])))
        }
        let ahead = root + "/" + UUID().uuidString.lowercased()
        try FileManager.default.createDirectory(atPath: ahead, withIntermediateDirectories: false)
        let twoHoursAgo = Date(timeIntervalSinceNow: -7200)
        for directory in [old, foreign] {
            try FileManager.default.setAttributes([.modificationDate: twoHoursAgo], ofItemAtPath: directory)
        }
        // Dated ten years ahead of the clock: dated now, and said so on standard error.
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSinceNow: 315_360_000)], ofItemAtPath: ahead)
        let before = Date(timeIntervalSinceNow: -1)
        let run = try await CLI.run(["gc", "--older-than", "3600", "--attachments-dir", root])
        #expect(run.status == 0)
        #expect(run.stdout == "removed 1 attachment directories from \(root)\n")
        #expect(
            run.stderr
                == "richpush gc: re-dated 1 attachment directories whose last change was ahead of the clock (set back "
                + "since?): each is removed once --older-than has passed from now\n")
        #expect(!FileManager.default.fileExists(atPath: old))
        #expect(FileManager.default.fileExists(atPath: fresh))
        #expect(FileManager.default.fileExists(atPath: foreign))
        let dated = try FileManager.default.attributesOfItem(atPath: ahead)[.modificationDate] as? Date
        #expect(
            dated.map { $0 >= before && $0 <= Date(timeIntervalSinceNow: 1) } == true, "\(String(describing: dated))")
    }

    @Test("gc names each old directory it could not remove whole, removes the others, and exits 1")
    func gcLeftovers() async throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        // Deeper than gc goes (8 directories), twice; and one it removes.
        let deep = (0..<2).map { _ in root + "/" + UUID().uuidString.lowercased() }
        let removable = root + "/" + UUID().uuidString.lowercased()
        // One whose first name inside holds a line break and an escape sequence: printed escaped, on its line.
        let forged = root + "/" + UUID().uuidString.lowercased()
        let name = "x\nrichpush gc: forged\u{1B}[2J"
        for directory in deep {
            try FileManager.default.createDirectory(
                atPath: directory + String(repeating: "/d", count: 9), withIntermediateDirectories: true)
        }
        try FileManager.default.createDirectory(
            atPath: forged + "/" + name + String(repeating: "/d", count: 8), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: removable, withIntermediateDirectories: false)
        for directory in deep + [forged, removable] { try makeOld(directory) }
        let run = try await CLI.run(["gc", "--older-than", "3600", "--attachments-dir", root])
        #expect(run.status == 1)
        #expect(run.stdout == "removed 1 attachment directories from \(root)\n")
        let reason = "more than 8 directories deep: not entered"
        let expected =
            (deep.map { $0 + String(repeating: "/d", count: 8) }
            + [forged + "/x\\u{A}richpush gc: forged\\u{1B}[2J" + String(repeating: "/d", count: 7)]).map {
                "richpush gc: not removed whole: " + $0 + ": " + reason
            }.sorted()
        #expect(run.stderr.split(separator: "\n").map(String.init).sorted() == expected, "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: removable))
    }

    @Test("a file size limit (ulimit -f) gives store-failed, not a crash, and leaves no partial file")
    func fileSizeLimit() async throws {
        let bed = try TestBed()
        let payload =
            #"{"aps":{"mutable-content":1},"adb_media":"\#(bed.url("/generated?prefix=photo.jpg&bytes=2000000"))"}"#
        let options = bed.cliOptions
        let run = try await offPool {
            try CLI.runBlocking(["enrich"] + options, stdin: payload, prefix: ["/usr/bin/prlimit", "--fsize=100000"])
        }
        #expect(run.status == 0)
        let problem = (run.lines.first?["problems"] as? [[String: Any]])?.first
        #expect(problem?["code"] as? String == "store-failed")
        #expect(bed.filesOnDisk().isEmpty, "left behind: \(bed.filesOnDisk())")
    }
}

extension CLITests {
    /// A row of a documented options table: the option (a row may name two), its default cell without backticks, and
    /// which commands it is for (`(`enrich` only)`, `(`explain` only)`, `(not `explain`)`, else every one).
    struct OptionRow: CustomStringConvertible {
        let option: String
        let `default`: String
        let scope: String

        func applies(to command: String) -> Bool {
            if scope.contains("`enrich` only") { return command == "enrich" }
            if scope.contains("`explain` only") { return command == "explain" }
            if scope.contains("`stream` only") { return command == "stream" }
            if scope.contains("(not `explain`)") { return command != "explain" }
            return true
        }

        var description: String { option }
    }

    /// The text of `file` (a path from the repository's root) from `heading` to the next heading of its level or
    /// above.
    static func documentSection(_ heading: String, in file: String) throws -> String {
        let text = try String(contentsOfFile: FixtureRoutes.fixturesDirectory + "/../" + file, encoding: .utf8)
        let section = try #require(
            text.components(separatedBy: heading + "\n").dropFirst().first, "\(file) has no \(heading)")
        let level = heading.prefix { $0 == "#" }
        return section.components(separatedBy: "\n" + level + " ").first ?? section
    }

    /// The rows of the first options table under `heading` of `file`, in order.
    static func documentedOptions(
        under heading: String = "## Options of `enrich`, `stream` and `explain`", in file: String = "docs/cli.md"
    ) throws -> [OptionRow] {
        let section = try documentSection(heading, in: file)
        return section.components(separatedBy: "\n\n").first(where: { $0.contains("| option |") })?
            .split(separator: "\n").filter { $0.hasPrefix("| `--") }
            .flatMap { row -> [OptionRow] in
                let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
                let value = cells[1].replacingOccurrences(of: "`", with: "")
                return cells[0].matches(of: /--[a-z0-9-]+/).map {
                    OptionRow(option: String($0.output), default: value, scope: cells[0])
                }
            } ?? []
    }

    /// The lines of `help`'s section `title` (`OPTIONS:`), trimmed, to the blank line that ends it.
    static func helpSection(_ title: String, of help: String) -> [String] {
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0.hasPrefix(title) }) else { return [] }
        var section = [String(lines[start].dropFirst(title.count))]
        for line in lines[(start + 1)...] {
            guard !line.isEmpty else { break }
            section.append(String(line))
        }
        return section.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The OPTIONS section of `--help`: each option and its whole entry (continuation lines joined), in order.
    static func helpEntries(_ help: String) -> [(option: String, entry: String)] {
        var entries: [(option: String, entry: String)] = []
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: "OPTIONS:") else { return [] }
        for line in lines[(start + 1)...] {
            guard !line.isEmpty else { break }
            let text = line.drop { $0 == " " }
            if line.count - text.count == 2, let name = text.split(separator: " ").first(where: { $0.hasPrefix("--") })
            {
                entries.append((String(name), String(text)))
            } else if !entries.isEmpty {
                entries[entries.count - 1].entry += " " + text
            }
        }
        return entries
    }
}

/// The result object as docs/output.md gives it, read from its table of objects: each object's keys
/// in order, an optional key (there only when there is something to say) in its place, and each value of its kind.
/// `check` records every difference and notes which optional keys it saw, so that a test can show its inputs
/// reached them all.
struct OutputContract {
    /// One object of the table.
    struct Shape {
        /// Its keys, in order.
        var keys: [String] = []
        /// Its optional keys.
        var optional: Set<String> = []
        /// The kind of each value as `PushPayload.JSON.kindDescription` writes it ("a string"); none for "object or
        /// null".
        var kinds: [String: String] = [:]
    }

    /// The objects by name: `result`, `attachment`, `route`, ...
    let shapes: [String: Shape]

    /// Optional keys, as `object.key`.
    var optional: Set<String> {
        Set(shapes.flatMap { name, shape in shape.optional.map { "\(name).\($0)" } })
    }

    /// docs/output.md's table: rows `| name (where) | `key` kind, *`key`* kind, ... |`.
    init() throws {
        let output = try String(
            contentsOfFile: FixtureRoutes.fixturesDirectory + "/../docs/output.md", encoding: .utf8)
        let table = try #require(
            output.components(separatedBy: "\n\n").first { $0.contains("| object | keys |") }, "no table of objects")
        let kinds = [
            "string": "a string", "number": "a number", "boolean": "a boolean", "object": "an object",
            "array": "an array",
        ]
        var shapes: [String: Shape] = [:]
        for row in table.split(separator: "\n").filter({ $0.hasPrefix("| ") && !$0.hasPrefix("| ---") }).dropFirst() {
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            try #require(cells.count == 2, "a row of the table of objects: \(row)")
            let name = String(cells[0].prefix { $0 != " " })
            var shape = Shape()
            for entry in cells[1].components(separatedBy: ", ") {
                let entryShape = /(\*?)`([a-z0-9_]+)`\*? ([a-z ]+)/
                let match = try #require(entry.wholeMatch(of: entryShape), "\(name): '\(entry)'")
                let key = String(match.2)
                shape.keys.append(key)
                if !match.1.isEmpty { shape.optional.insert(key) }
                guard match.3 != "object or null" else { continue }
                let kind = kinds[String(match.3)]
                #expect(kind != nil, "\(name).\(key): kind '\(match.3)'")
                shape.kinds[key] = kind
            }
            shapes[name] = shape
        }
        self.shapes = shapes
    }

    /// The optional keys seen so far.
    var seen: Set<String> = []
    /// The objects checked so far.
    var checked: Set<String> = []

    mutating func check(_ value: PushPayload.JSON, input: String) {
        guard let result = object(value, "result", at: input) else { return }
        #expect(result["input"]?.stringValue == input)
        let outcome = result["outcome"]?.stringValue.flatMap(EnrichmentResult.Outcome.init(rawValue:))
        #expect(outcome != nil, "\(input): outcome \(String(describing: result["outcome"]))")
        // `content` is the payload, or null for an invalid input.
        #expect(result["content"]?.kindDescription == (outcome == .invalid ? "null" : "an object"), "\(input): content")
        if let format = result["format"] { _ = object(format, "format", at: input) }
        if let route = result["route"].flatMap({ object($0, "route", at: input) }) {
            for key in ["id_source", "url_source"] {
                if let source = route[key] { _ = object(source, "source", at: input) }
            }
        }
        for problem in items(result["problems"]) { _ = object(problem, "problem", at: input) }
        var hints: [String: String] = [:]
        for item in items(result["attachments"]) {
            guard let attachment = object(item, "attachment", at: input) else { continue }
            thumbnail(attachment["thumbnail"], at: input)
            if let original = attachment["original"] { _ = object(original, "original", at: input) }
            if let identifier = attachment["identifier"]?.stringValue, let hint = attachment["type_hint"]?.stringValue {
                hints[identifier] = hint
            }
        }
        guard let richpush = result["content"]?.objectValue?["richpush"] else { return }
        for item in items(object(richpush, "richpush", at: input)?["attachments"]) {
            guard let listed = object(item, "listed", at: input) else { continue }
            #expect(listed["url"]?.stringValue?.hasPrefix("file:///") == true, "\(input): listed url")
            thumbnail(listed["thumbnail"], at: input)
            guard let identifier = listed["identifier"]?.stringValue, let hint = hints[identifier] else { continue }
            // docs/output.md: an attachment carries its type_hint "in the result and in the content's list".
            #expect(listed["type_hint"]?.stringValue == hint, "\(input): \(identifier) in the content's list")
        }
    }

    private mutating func thumbnail(_ value: PushPayload.JSON?, at place: String) {
        guard let value, let thumbnail = object(value, "thumbnail", at: place) else { return }
        if let clip = thumbnail["clip"] { _ = object(clip, "clip", at: place) }
    }

    private func items(_ value: PushPayload.JSON?) -> [PushPayload.JSON] {
        if case .array(let items)? = value { return Array(items) }
        return []
    }

    /// `value` as an object of `kind`, its keys and their values checked; nil (and recorded) if not an object.
    private mutating func object(_ value: PushPayload.JSON, _ kind: String, at place: String) -> JSONObject? {
        guard let object = value.objectValue else {
            Issue.record("\(place): \(kind) is \(value.kindDescription), not an object")
            return nil
        }
        guard let shape = shapes[kind] else {
            Issue.record("docs/output.md's table of objects has no row '\(kind)'")
            return object
        }
        checked.insert(kind)
        let keys = object.members.map(\.key.value)
        seen.formUnion(keys.filter(shape.optional.contains).map { "\(kind).\($0)" })
        let expected = shape.keys.filter { !shape.optional.contains($0) || keys.contains($0) }
        #expect(keys == expected, "\(place): the keys of \(kind)")
        for (key, value) in object.members.map({ ($0.key.value, $0.value) }) {
            guard let kindOfValue = shape.kinds[key] else { continue }
            #expect(value.kindDescription == kindOfValue, "\(place): \(kind).\(key) is \(value.kindDescription)")
        }
        return object
    }
}
