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
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (executable as NSString).deletingLastPathComponent + "/richpush"
    }

    static func run(_ arguments: [String], stdin: String? = nil) async throws -> Run {
        try await offPool { try runBlocking(arguments, stdin: stdin) }
    }

    /// Runs the CLI; with `prefix`, through that program (`prlimit ...`), which gets the CLI's path and
    /// arguments after its own, or only `arguments` when `direct`.
    static func runBlocking(_ arguments: [String], stdin: String?, prefix: [String] = [], direct: Bool = false) throws -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: prefix.first ?? binary)
        process.arguments =
            prefix.isEmpty ? arguments : Array(prefix.dropFirst()) + (direct ? [] : [binary]) + arguments
        let output = Pipe()
        let error = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        let errData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    /// Starts the CLI with pipes to its standard input and from its standard output (standard error is
    /// discarded), for a test that talks to it while it runs.
    static func start(_ arguments: [String]) throws -> (process: Process, input: FileHandle, output: FileHandle) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
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
        ["--allow-http", "--allow-network", "127.0.0.1/32", "--allow-port", "1024-65535", "--resolve", "media.test:\(origin.port):127.0.0.1",
            "--attachments-dir", attachments]
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

func temporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "richpush-cli-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
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
        #expect(lines.map { $0["outcome"] as? String } == ["complete", "invalid", "invalid", "invalid", "invalid", "invalid", "complete", "invalid"])
        let codes = lines.map { (($0["problems"] as? [[String: Any]])?.first?["code"] as? String) ?? "" }
        #expect(codes == ["", "not-json", "unreadable", "invalid-utf8", "too-deep", "not-object", "", "unreadable"])
        // The output contract: every key, in order.
        #expect(run.stdout.split(separator: "\n").allSatisfy { $0.hasPrefix(#"{"input":"#) && $0.contains(#""elapsed_ms":"#) })
        let attachment = try #require((lines[0]["attachments"] as? [[String: Any]])?.first)
        #expect(Set(attachment.keys) == ["identifier", "path", "source", "convention", "type", "mime", "bytes", "sha256"])
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

    @Test("enrich: standard input when no file is named")
    func enrichStdin() async throws {
        let bed = try TestBed()
        let run = try await CLI.run(["enrich"] + bed.cliOptions, stdin: #"{"aps":{"mutable-content":1},"adb_media":"\#(bed.url("/media/logo.png"))"}"#)
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
        let inputs = try ["adobe-photo.json", "invalid/not-json.json"].map { try bed.payloadFile($0, directory: directory) }
        let run = try await CLI.run(["enrich", "--out", out] + bed.cliOptions + inputs)
        #expect(run.status == 1)
        #expect(run.stdout.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted() == ["adobe-photo.json", "not-json.json"])
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
        let conventions = (zegoOnly.lines.first?["attachments"] as? [[String: Any]])?.compactMap { $0["convention"] as? String }
        #expect(conventions == ["zego"])
        let reversed = try await CLI.run(["enrich", "--convention", "zego", "--convention", "adb_media"] + bed.cliOptions + [input])
        let order = (reversed.lines.first?["attachments"] as? [[String: Any]])?.compactMap { $0["convention"] as? String }
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

    @Test("--help describes every option with its default; --version prints the version")
    func help() async throws {
        for command in ["enrich", "stream"] {
            let run = try await CLI.run([command, "--help"])
            #expect(run.status == 0)
            for option in ["--deadline", "--attachments-dir", "--allow-http", "--allow-network", "--resolve", "--ca-bundle", "--concurrency"] {
                #expect(run.stdout.contains(option), "\(command) --help lacks \(option)")
            }
            #expect(run.stdout.contains("(default: 25)"))
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
        let run = try await CLI.run(["stream", "--concurrency", "4"] + bed.cliOptions, stdin: lines.joined(separator: "\n"))
        #expect(run.status == 0)
        #expect(run.lines.map { $0["input"] as? String } == ["-:1", "-:2", "-:4", "-:5", "-:6"])
        #expect(run.lines.map { $0["outcome"] as? String } == ["complete", "invalid", "complete", "unchanged", "invalid"])
    }

    @Test("stream: a line over the size limit is invalid and the stream goes on")
    func streamLongLine() async throws {
        let bed = try TestBed()
        let long = #"{"x":""# + String(repeating: "a", count: 1 << 20) + #""}"#
        let run = try await CLI.run(["stream"] + bed.cliOptions, stdin: long + "\n" + #"{"aps":{}}"# + "\n")
        #expect(run.status == 0)
        #expect(run.lines.map { $0["outcome"] as? String } == ["invalid", "unchanged"])
        let problem = (run.lines.first?["problems"] as? [[String: Any]])?.first
        #expect(problem?["code"] as? String == "too-large")
    }

    @Test("stream: each result is written as soon as it is due, before input ends")
    func streamIsInteractive() async throws {
        let bed = try TestBed()
        let (process, input, reader) = try CLI.start(["stream"] + bed.cliOptions)
        defer {
            try? input.close()
            process.waitUntilExit()
        }
        input.write(Data((#"{"aps":{"mutable-content":1},"adb_media":"\#(bed.url("/media/photo.jpg"))"}"# + "\n").utf8))
        // Read the first result while standard input is still open; a bounded wait.
        let received = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var line = Data()
        Thread {
            while !line.contains(0x0A) {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                line += chunk
            }
            received.signal()
        }.start()
        let arrived = try await offPool { received.wait(timeout: .now() + 10) == .success }
        #expect(arrived)
        #expect(String(decoding: line, as: UTF8.self).contains(#""outcome":"complete""#))
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
            FileManager.default.createFile(atPath: directory + "/a.jpg", contents: Data([1]))
        }
        let twoHoursAgo = Date(timeIntervalSinceNow: -7200)
        for directory in [old, foreign] {
            try FileManager.default.setAttributes([.modificationDate: twoHoursAgo], ofItemAtPath: directory)
        }
        let run = try await CLI.run(["gc", "--older-than", "3600", "--attachments-dir", root])
        #expect(run.status == 0)
        #expect(run.stdout.contains("removed 1"))
        #expect(!FileManager.default.fileExists(atPath: old))
        #expect(FileManager.default.fileExists(atPath: fresh))
        #expect(FileManager.default.fileExists(atPath: foreign))
    }

    @Test("a file size limit (ulimit -f) gives store-failed, not a crash, and leaves no partial file")
    func fileSizeLimit() async throws {
        let bed = try TestBed()
        let payload = #"{"aps":{"mutable-content":1},"adb_media":"\#(bed.url("/generated?prefix=photo.jpg&bytes=2000000"))"}"#
        let options = bed.cliOptions
        let run = try await offPool {
            try CLI.runBlocking(["enrich"] + options, stdin: payload, prefix: ["/usr/bin/prlimit", "--fsize=100000"])
        }
        #expect(run.status == 0)
        let problem = (run.lines.first?["problems"] as? [[String: Any]])?.first
        #expect(problem?["code"] as? String == "store-failed")
        #expect(bed.filesOnDisk().isEmpty, "left behind: \(bed.filesOnDisk())")
    }

    @Test("with stderr a terminal and many inputs, progress is drawn on stderr; stdout stays one result per line")
    func progressOnTerminal() async throws {
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let inputs = try ["adobe-photo.json", "zego-object.json", "no-media.json"].map { try bed.payloadFile($0, directory: directory) }
        let out = directory + "/out.ndjson"
        // script(1) gives the command a pseudo-terminal; stdout goes to a file, stderr stays on the terminal.
        let command = ([CLI.binary, "enrich"] + bed.cliOptions + inputs).joined(separator: " ") + " > " + out
        let run = try await offPool {
            try CLI.runBlocking(["-qec", command, "/dev/null"], stdin: nil, prefix: ["/usr/bin/script"], direct: true)
        }
        #expect(run.status == 0)
        #expect(run.stdout.contains("3/3 payloads"))
        let lines = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 3)
    }
}
