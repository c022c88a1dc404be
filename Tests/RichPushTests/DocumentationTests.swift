import Foundation
import RichPushTestSupport
import Testing

/// The documentation names only what exists (issue 27): every `richpush` command that README.md and docs/*.md show
/// is a subcommand of the built CLI, every option shown after one is in that command's `--help`, and every other
/// option they name is in some command's `--help`, or is another program's (the benchmark's, the fixture origin's,
/// curl's, Redis's, swift's, systemctl's).
@Suite("Documentation: the commands and options it names exist")
struct DocumentationTests {
    @Test("every richpush command and --option in README.md and docs/*.md is in the built CLI's --help")
    func commandsAndOptionsExist() async throws {
        let help = try await HelpIndex.load()
        try #require(help.commands.count >= 8, "richpush --help lists its subcommands: \(help.commands)")
        let others = try DocumentScan.otherPrograms()
        var findings: [String] = []
        var invocations = 0
        var options = 0
        for file in try DocumentScan.files() {
            let text = try String(contentsOfFile: DocumentScan.root + "/" + file, encoding: .utf8)
            for unit in DocumentScan.codeUnits(of: text) {
                let scan = DocumentScan.scan(unit.text)
                for invocation in scan.invocations {
                    invocations += 1
                    let place = "\(file):\(unit.line): `\(unit.text.prefix(80))`"
                    guard let known = help.options[invocation.command] else {
                        findings.append("\(place): no command 'richpush \(invocation.command)'")
                        continue
                    }
                    for option in invocation.options where !known.contains(option) {
                        findings.append("\(place): '\(option)' is not in 'richpush \(invocation.command) --help'")
                    }
                    options += invocation.options.count
                }
                for option in scan.loose where !help.all.contains(option) && others[option] == nil {
                    findings.append(
                        "\(file):\(unit.line): '\(option)' is in no richpush --help (nor another program's)")
                }
                options += scan.loose.count
            }
        }
        // The documents were read: the README alone shows every mode once.
        #expect(invocations >= 20, "richpush invocations found: \(invocations)")
        #expect(options >= 150, "options found: \(options)")
        #expect(
            findings.isEmpty,
            "\(findings.count) names the documentation gives do not exist:\n\(findings.joined(separator: "\n"))")
    }

    @Test(
        """
        the README's examples of enrich, stream, explain, preflight, render and gc run as written, with the flags it \
        gives, against a loopback origin: nothing refused by policy, every payload complete
        """)
    func readmeExamplesRun() async throws {
        let bed = try TestBed()
        let port = String(bed.origin.port)
        // A scratch directory standing for the checkout: the fixture payloads with the origin's port in their URLs
        // (the README's origin listens on 8787; this one on a free port), the templates as they are.
        let scratch = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let fixtures = FixtureDirectory.root
        for directory in ["payloads", "templates"] {
            try FileManager.default.createDirectory(
                atPath: scratch + "/Fixtures/" + directory, withIntermediateDirectories: true)
            for name in try FileManager.default.contentsOfDirectory(atPath: fixtures + "/" + directory)
            where name.hasSuffix(".json") {
                let text = try String(contentsOfFile: fixtures + "/" + directory + "/" + name, encoding: .isoLatin1)
                try Data(text.replacingOccurrences(of: ":8787/", with: ":\(port)/").utf8)
                    .write(to: URL(fileURLWithPath: scratch + "/Fixtures/" + directory + "/" + name))
            }
        }
        let readme = try String(contentsOfFile: DocumentScan.root + "/README.md", encoding: .utf8)
        let blocks = DocumentScan.shellBlocks(of: readme)
        // "Enrich a payload of your own": the origin it starts is this one (its /media/ serves Fixtures/media), the
        // image the demo's photo.
        let own = try #require(blocks.first { $0.contains("out/mine/payload.json") }, "the README's own payload")
        var examples = [
            own.split(separator: "\n").filter {
                !$0.hasPrefix("mkdir") && !$0.hasPrefix("richpush-fixture-origin") && !$0.hasPrefix("sleep")
            }
            .joined(separator: "\n").replacingOccurrences(of: "8000", with: port)
            .replacingOccurrences(of: "cat.jpg", with: "photo.jpg")
        ]
        // The run modes: the block that starts the demo's origin and sets LOCAL, then one block a command.
        let setUp = try #require(blocks.first { $0.contains("LOCAL=(") }, "the README's LOCAL flags")
        let local = try #require(setUp.split(separator: "\n").first { $0.hasPrefix("LOCAL=(") })
            .replacingOccurrences(of: "8787", with: port)
        let commands = ["enrich", "stream", "explain", "preflight", "render", "gc"].map { "richpush " + $0 }
        for command in commands {
            let block = try #require(
                blocks.first { $0.hasPrefix(command) || $0.contains(command + #" "${LOCAL[@]}""#) },
                "the README's example of \(command)")
            examples.append(local + "\n" + block)
        }
        let path = (CLI.binary as NSString).deletingLastPathComponent
        for example in examples {
            // TMPDIR: the default attachments root (explain's, preflight's) in the scratch directory too.
            let script =
                "set -eo pipefail; cd '\(scratch)'; mkdir -p out/mine\n"
                + "export PATH='\(path)':\"$PATH\" TMPDIR='\(scratch)'\n" + example
            let run = try await offPool {
                try CLI.runBlocking(["-c", script], stdin: nil, prefix: ["/bin/bash"], direct: true)
            }
            // preflight exits 1 when something will not show: the README's FCM message has a video for Android.
            #expect(run.status == (example.contains("richpush preflight") ? 1 : 0), "\(example)\n\(run.stderr)")
            for refusal in ["blocked-", #""outcome":"failed""#, #""code":"network""#, "would NOT attach"] {
                #expect(!run.stdout.contains(refusal), "\(example)\n\(run.stdout)")
            }
            for line in run.lines where line["outcome"] != nil {
                #expect(line["outcome"] as? String == "complete", "\(example)\n\(line)")
            }
            #expect(!run.stdout.isEmpty, "\(example)")
        }
    }

    @Test("every relative link in README.md and docs/*.md leads to a file, and its #anchor to a heading there")
    func linksResolve() throws {
        var findings: [String] = []
        var links = 0
        for file in try DocumentScan.files() {
            let text = try String(contentsOfFile: DocumentScan.root + "/" + file, encoding: .utf8)
            let directory = (file as NSString).deletingLastPathComponent
            for match in text.matches(of: /\]\(([^)\s]+)\)/) where !match.1.hasPrefix("http") {
                links += 1
                let parts = match.1.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let target =
                    parts[0].isEmpty
                    ? file
                    : ((directory as NSString).appendingPathComponent(String(parts[0])) as NSString).standardizingPath
                guard let linked = try? String(contentsOfFile: DocumentScan.root + "/" + target, encoding: .utf8) else {
                    findings.append("\(file): \(match.1): no file \(target)")
                    continue
                }
                if parts.count == 2, !DocumentScan.anchors(of: linked).contains(String(parts[1])) {
                    findings.append("\(file): \(match.1): no heading '#\(parts[1])' in \(target)")
                }
            }
        }
        #expect(links >= 30, "links found: \(links)")
        #expect(findings.isEmpty, "\(findings.count) links lead nowhere:\n\(findings.joined(separator: "\n"))")
    }

    @Test(
        "the scan attributes an option to the command it follows, and knows an option's value from a command",
        arguments: [
            ("richpush serve --listen 127.0.0.1:8080 --fake-flag", ["serve: --listen --fake-flag"], [String]()),
            ("redis-cli XADD pushes '*' payload x | richpush stream --deadline 3", ["stream: --deadline"], []),
            ("richpush worker --group richpush --output-stream enriched", ["worker: --group --output-stream"], []),
            ("mkdir -p /etc/richpush && richpush gc --older-than 60", ["gc: --older-than"], []),
            ("/usr/local/bin/richpush enrich --out d; curl --retry 5", ["enrich: --out"], ["--retry"]),
            ("Sources/richpush the CLI, --deadline and the three --allow-* flags", [], ["--deadline"]),
            ("richpush worker: LOADING Redis is loading", ["worker:"], []),
            ("richpush --help | --version", [], ["--help", "--version"]),
            ("export PATH=.build/release:$PATH   # richpush, richpush-fixture-origin --seconds", [], ["--seconds"]),
            ("systemd-sysusers   # makes the system user richpush (from sysusers.d)", [], []),
            (
                "ExecStart=/usr/local/bin/richpush serve --listen :8080 --attachments-dir %S/richpush --deadline 10",
                ["serve: --listen --attachments-dir --deadline"], []
            ),
        ])
    func scan(text: String, invocations: [String], loose: [String]) {
        let scan = DocumentScan.scan(text)
        #expect(scan.invocations.map { "\($0.command):" + $0.options.map { " " + $0 }.joined() } == invocations)
        #expect(scan.loose == loose)
    }
}

/// What the built CLI's `--help` says: its subcommands, and each one's options.
struct HelpIndex {
    /// Each subcommand's options, from its own `--help`.
    var options: [String: Set<String>] = [:]
    /// The top-level options (`--help`, `--version`) and every subcommand's.
    var all: Set<String> = []

    var commands: [String] { options.keys.sorted() }

    static func load() async throws -> HelpIndex {
        let top = try await CLI.run(["--help"])
        let after = try #require(top.stdout.components(separatedBy: "SUBCOMMANDS:\n").dropFirst().first)
        let section = after.components(separatedBy: "\n\n").first ?? after
        var index = HelpIndex()
        index.all = Set(DocumentScan.options(in: top.stdout))
        // A subcommand's line starts two spaces in; its description's continuation lines further.
        for line in section.split(separator: "\n") where line.hasPrefix("  ") && !line.hasPrefix("   ") {
            guard let command = line.split(separator: " ").first else { continue }
            let help = try await CLI.run([String(command), "--help"])
            #expect(help.status == 0, "richpush \(command) --help")
            index.options[String(command)] = Set(DocumentScan.options(in: help.stdout))
            index.all.formUnion(index.options[String(command)]!)
        }
        return index
    }
}

/// Reads the documentation's code: inline code spans and fenced blocks, the places a command or an option is named.
enum DocumentScan {
    /// The repository's root.
    static var root: String { FixtureDirectory.root + "/.." }

    /// README.md and docs/*.md, as paths from the root.
    static func files() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root + "/docs").filter { $0.hasSuffix(".md") }
        return ["README.md"] + docs.sorted().map { "docs/" + $0 }
    }

    /// The options of other programs the documents show: the benchmark's (read from bench/run.py), the fixture
    /// origin's (read from its main.swift), and those of curl, Redis's programs, swift and systemctl, listed here.
    static func otherPrograms() throws -> [String: String] {
        var programs: [String: String] = [:]
        for option in [
            "--aws-sigv4", "--data-binary", "--parallel", "--parallel-max", "--retry", "--retry-connrefused",
        ] {
            programs[option] = "curl"
        }
        for option in ["--bind", "--daemonize", "--dir", "--port", "--save", "--raw"] {
            programs[option] = "redis-server, redis-cli"
        }
        programs["--configuration"] = "swift format"
        programs["--static-swift-stdlib"] = "swift build"
        programs["--now"] = "systemctl"
        let bench = try String(contentsOfFile: root + "/bench/run.py", encoding: .utf8)
        for match in bench.matches(of: /add_argument\("(--[a-z0-9-]+)"/) { programs[String(match.1)] = "bench/run.py" }
        let origin = try String(
            contentsOfFile: root + "/Sources/richpush-fixture-origin/main.swift", encoding: .utf8)
        for match in origin.matches(of: /case "(--[a-z0-9-]+)"/) { programs[String(match.1)] = "the fixture origin" }
        return programs
    }

    /// The anchors of `text`'s headings, as GitHub makes them: lowercase, spaces as hyphens, and every character
    /// but letters, digits, hyphens and underscores dropped (`## The `Enricher.Configuration` reference` is
    /// `the-enricherconfiguration-reference`). Headings inside fenced blocks are none.
    static func anchors(of text: String) -> Set<String> {
        var anchors: Set<String> = []
        var fenced = false
        for line in text.split(separator: "\n") {
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") { fenced.toggle() }
            guard !fenced, line.hasPrefix("#") else { continue }
            let title = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces).lowercased()
            anchors.insert(
                String(
                    title.filter { $0.isLetter || $0.isNumber || $0 == " " || $0 == "-" || $0 == "_" }
                        .map { $0 == " " ? "-" : $0 }))
        }
        return anchors
    }

    /// The text of every ```sh block of `text`, in order.
    static func shellBlocks(of text: String) -> [String] {
        var blocks: [String] = []
        var block: [Substring]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if block == nil, line == "```sh" {
                block = []
            } else if block != nil, line == "```" {
                blocks.append(block!.joined(separator: "\n"))
                block = nil
            } else if block != nil {
                block!.append(line)
            }
        }
        return blocks
    }

    /// A piece of code in a document: an inline span, or a fenced block's logical line (`\` continuations joined),
    /// with the line it starts on.
    struct Unit {
        var line: Int
        var text: String
    }

    /// Every inline code span and every logical line of a fenced block of `text`, in order.
    static func codeUnits(of text: String) -> [Unit] {
        var units: [Unit] = []
        // The prose, line for line, with each fenced block's lines left empty.
        var prose: [Substring] = []
        var block: (line: Int, lines: [Substring])?
        for (offset, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                if let open = block {
                    units += logicalLines(open.lines, from: open.line)
                    block = nil
                } else {
                    block = (offset + 2, [])
                }
            } else if block != nil {
                block!.lines.append(line)
            }
            prose.append(block == nil && !line.trimmingCharacters(in: .whitespaces).hasPrefix("```") ? line : "")
        }
        // An inline span may wrap onto the next line of its paragraph, but never past a blank line.
        var span: Unit?
        for (offset, line) in prose.enumerated() {
            if line.trimmingCharacters(in: .whitespaces).isEmpty {
                span = nil
                continue
            }
            if span != nil { span!.text += " " }
            for character in line {
                if character == "`" {
                    if let open = span {
                        units.append(open)
                        span = nil
                    } else {
                        span = Unit(line: offset + 1, text: "")
                    }
                } else if span != nil {
                    span!.text.append(character)
                }
            }
        }
        return units.sorted { $0.line < $1.line }
    }

    private static func logicalLines(_ lines: [Substring], from first: Int) -> [Unit] {
        var units: [Unit] = []
        var current: Unit?
        for (offset, line) in lines.enumerated() {
            let text = line.hasSuffix("\\") ? String(line.dropLast()) : String(line)
            if current == nil { current = Unit(line: first + offset, text: text) } else { current!.text += " " + text }
            if !line.hasSuffix("\\") {
                units.append(current!)
                current = nil
            }
        }
        if let current { units.append(current) }
        return units
    }

    /// A `richpush <command>` invocation and the options given to it.
    struct Invocation {
        var command: String
        var options: [String]
    }

    /// What a piece of code names: the invocations of richpush in it, and the options outside any.
    static func scan(_ text: String) -> (invocations: [Invocation], loose: [String]) {
        let words = text.split(whereSeparator: \.isWhitespace).map(String.init)
        var invocations: [Invocation] = []
        var loose: [String] = []
        var current: Invocation?
        var previous = ""
        for (index, word) in words.enumerated() {
            defer { previous = word }
            // A shell's separators end an invocation: what follows is another program's.
            if ["|", "||", "&&", ";", "&", ">", "2>", "<"].contains(word) || word.hasPrefix("#") || word.hasSuffix(";")
            {
                if let done = current { invocations.append(done) }
                current = nil
                continue
            }
            // Quotes and brackets around a word go; a comma or colon after it stays: `richpush,` is a name in a
            // list, not a program run.
            let bare = word.trimmingCharacters(in: CharacterSet(charactersIn: "`'\"()[]"))
            // `richpush` as a program: alone or at the end of an installed or built path, not as an option's
            // value (`--group richpush`), nor a directory (`Sources/richpush`, `/etc/richpush`).
            let program =
                bare == "richpush"
                || ["/bin/richpush", "/release/richpush", "/debug/richpush"].contains(where: bare.hasSuffix)
            // What follows says whether this is a run: a word (`richpush serve`, `richpush worker:` in a log
            // line) names a command; an option, `help` or a placeholder (`richpush <command>`) none; anything else
            // (`the user richpush (from sysusers.d)`) is prose about the name.
            let next =
                index + 1 < words.count
                ? words[index + 1].trimmingCharacters(in: CharacterSet(charactersIn: "`'\"")) : ""
            let command = next.trimmingCharacters(in: CharacterSet(charactersIn: ",:;)"))
            let isWord =
                command.first?.isLowercase == true && command.allSatisfy { $0.isASCII && ($0.isLowercase || $0 == "-") }
            if program, !previous.hasPrefix("--"), isWord || next.hasPrefix("-") || next.hasPrefix("<") {
                if let done = current { invocations.append(done) }
                current = isWord && command != "help" ? Invocation(command: command, options: []) : nil
                continue
            }
            for option in options(in: word) {
                if current != nil { current!.options.append(option) } else { loose.append(option) }
            }
        }
        if let done = current { invocations.append(done) }
        return (invocations, loose)
    }

    /// The `--options` in `text`: `--` then a letter, then letters, digits and hyphens, not ending in a hyphen;
    /// a pattern (`--allow-*`) is none.
    static func options(in text: String) -> [String] {
        text.split(whereSeparator: { $0.isWhitespace || "`'\"()[],|=".contains($0) }).compactMap { token in
            guard token.hasPrefix("--"), let first = token.dropFirst(2).first, first.isASCII, first.isLowercase else {
                return nil
            }
            let name = token.dropFirst(2).prefix { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }
            let after = token.dropFirst(2 + name.count).first
            guard after != "*", !name.hasSuffix("-") else { return nil }
            return "--" + name
        }
    }
}
