import Foundation
import RichPush
import RichPushHTTP
import RichPushServer
import RichPushWorker
import Testing

@testable import richpush

/// Parses `arguments` for `type` and plans it, as `richpush` does before running it: the options it declares, by
/// name, in help's order, and those it never read.
private func planned<Command: ParsableCommand>(_ type: Command.Type, _ arguments: [String]) throws
    -> (declared: [String], unread: [String], plan: Command.Plan)
{
    let command = try #require(try Command.parse(arguments), "\(type.configuration.name) printed its help")
    let plan = try command.plan()
    let declared = command.declarations.filter(\.kind.isNamed).map { "--" + $0.name }
    return (declared, command.unread, plan)
}

/// A command that declares an option it never reads: what the checks below must catch.
private struct Careless: ParsableCommand {
    static let configuration = CommandConfiguration(name: "careless", abstract: "Reads one option of two.")

    @Option("read", .whole("things", in: 1...9), help: "Read.")
    var read: Int = 1
    @Option("ignored", .text("text"), help: "Never read.")
    var ignored: String?

    func plan() throws(UsageError) -> Int { read }
    static func run(_ plan: Int) async -> Int32 { 0 }
}

@Suite("CLI: every command declared once, its help derived, its options read")
struct CommandDeclarationTests {
    /// The fewest arguments each command plans with: what it requires.
    static func required(_ name: String, files directory: String) -> [String] {
        switch name {
        case "gc": ["--older-than", "0"]
        case "render": ["--template", directory + "/template.json", "--params", directory + "/params.json"]
        case "worker": ["--redis", "redis://127.0.0.1:1", "--stream", "in", "--group", "g", "--output-stream", "out"]
        default: []
        }
    }

    @Test(
        "each command reads every option it declares, and declares each once",
        arguments: RichPushCommand.subcommands.map { $0.configuration.name })
    func readsWhatItDeclares(name: String) throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(#"{"aps":{"alert":"$(name)"}}"#.utf8).write(to: URL(fileURLWithPath: directory + "/template.json"))
        try Data(#"{"name":"A"}"#.utf8).write(to: URL(fileURLWithPath: directory + "/params.json"))
        let type = try #require(RichPushCommand.subcommands.first { $0.configuration.name == name })
        let (declared, unread, _) = try planned(type, Self.required(name, files: directory))
        #expect(unread.isEmpty, "\(name) declares options it never reads: \(unread)")
        #expect(Set(declared).count == declared.count, "\(name) declares an option twice: \(declared)")
    }

    @Test(
        """
        every command that starts the engine (or opens the attachments root) lists exit status 70 in its help; serve's \
        help names each of its routes
        """)
    func helpExitStatusAndRoutes() {
        for type in RichPushCommand.subcommands where type.configuration.name != "render" {
            let help = type.help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(help.contains("; 70"), "\(type.configuration.name) --help: \(help)")
        }
        let serve = ServeCommand.help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for route in [
            "/v1/enrich", "/v1/explain", "/v1/preflight", "/v1/attachments/", "/healthz", "/readyz", "/metrics",
        ] {
            #expect(serve.contains(route), "serve --help does not name \(route)")
        }
    }

    @Test("the check catches an option declared and never read")
    func catchesUnread() throws {
        #expect(try planned(Careless.self, []).unread == ["--ignored"])
        #expect(try planned(Careless.self, ["--ignored", "x"]).unread == ["--ignored"])
    }

    @Test("each command's help lists exactly its declared options, each with its range and default or required")
    func helpFromDeclarations() throws {
        for type in RichPushCommand.subcommands {
            let declarations = type.init().declarations.filter(\.kind.isNamed)
            let entries = CLITests.helpEntries(type.help)
            #expect(entries.map(\.option) == declarations.map { "--" + $0.name } + ["--help"])
            for (declaration, entry) in zip(declarations, entries) {
                switch declaration.requirement {
                case .required: #expect(entry.entry.hasSuffix("required)"), "\(entry.entry)")
                case .defaultValue(let text): #expect(entry.entry.hasSuffix("default: \(text))"), "\(entry.entry)")
                }
                if let range = declaration.range { #expect(entry.entry.contains("(\(range);"), "\(entry.entry)") }
            }
        }
        #expect(Careless.help.contains("--ignored <text>"))
    }

    @Test("the overview lists every command with its own abstract; usage names what is required")
    func overview() {
        let lines = CLITests.helpSection("SUBCOMMANDS:", of: RichPushCommand.overview)
        var rows: [(name: String, abstract: String)] = []
        for line in lines where !line.hasPrefix("See ") {
            let words = line.split(separator: " ", maxSplits: 1).map(String.init)
            if let name = words.first, RichPushCommand.subcommands.contains(where: { $0.configuration.name == name }) {
                rows.append((name, words.count > 1 ? words[1].trimmingCharacters(in: .whitespaces) : ""))
            } else if !rows.isEmpty {
                rows[rows.count - 1].abstract += " " + line
            }
        }
        #expect(rows.map(\.name) == RichPushCommand.subcommands.map { $0.configuration.name })
        for (row, type) in zip(rows, RichPushCommand.subcommands) {
            #expect(row.abstract == type.configuration.abstract)
        }
        #expect(
            WorkerCommand.usage
                == "richpush worker --redis <url> --stream <key> --group <name> --output-stream <key> [<options>]")
        #expect(EnrichCommand.usage == "richpush enrich [<options>] [<file> ...]")
    }

    @Test("unset options give the library's defaults: the configuration, the service's settings, the worker's")
    func defaultsAreTheLibrarys() throws {
        let library = Enricher.Configuration()
        let enrich = try planned(EnrichCommand.self, []).plan.configuration
        #expect(enrich.timeout == library.timeout)
        #expect(enrich.cache.enabled == library.cache.enabled && enrich.cache.timeToLive == library.cache.timeToLive)
        #expect(enrich.cache.maximumBytes == library.cache.maximumBytes)
        #expect(enrich.retry.retries == library.retry.retries)
        #expect(enrich.routeKeys == library.routeKeys)
        #expect(enrich.network.allowedPorts == library.network.allowedPorts)
        #expect(enrich.network.addressPolicy == library.network.addressPolicy)
        #expect(enrich.transform.maximumSourceBytes == library.transform.maximumSourceBytes)
        #expect(enrich.transform.maximumPixels == library.transform.maximumPixels)
        #expect(enrich.transform.maximumDimension == library.transform.maximumDimension)
        #expect(enrich.transform.transcode == library.transform.transcode)
        #expect(enrich.transform.stripMetadata == library.transform.stripMetadata)
        #expect(enrich.transform.verifyImages == library.transform.verifyImages)
        #expect(enrich.conventions.conventions.map(\.name) == library.conventions.conventions.map(\.name))

        let serve = try planned(ServeCommand.self, []).plan
        let settings = EnrichmentService.Settings()
        #expect(serve.settings.maximumBodyBytes == settings.maximumBodyBytes)
        #expect(serve.settings.maximumBatchBytes == settings.maximumBatchBytes)
        #expect(serve.settings.maximumInFlight == settings.maximumInFlight)
        #expect(serve.settings.concurrency == settings.concurrency)
        let limits = HTTPServer.Limits()
        #expect(serve.limits.connections == limits.connections)
        #expect(serve.limits.connectionsPerAddress == limits.connectionsPerAddress)
        #expect(serve.limits.idleTimeoutSeconds == limits.idleTimeoutSeconds)
        #expect(serve.limits.headerTimeoutSeconds == limits.headerTimeoutSeconds)
        #expect(serve.limits.minimumBodyRate == limits.minimumBodyRate)
        #expect(serve.limits.bufferedBodyBytes == limits.bufferedBodyBytes)

        let worker = try planned(WorkerCommand.self, Self.required("worker", files: "")).plan.settings
        let defaults = WorkerCommand.defaults
        #expect(worker.maximumDeliveries == defaults.maximumDeliveries)
        #expect(worker.claimIdle == defaults.claimIdle)
        #expect(worker.drainTimeout == defaults.drainTimeout)
        #expect(worker.removeIdleConsumers == defaults.removeIdleConsumers)
        #expect(worker.concurrency == defaults.concurrency)
        #expect(worker.createGroup == defaults.createGroup)
    }
}

extension CommandDeclarationTests {
    /// The default `type`'s `--help` shows for `option`: the text after "default: ".
    static func shownDefault<Command: ParsableCommand>(_ type: Command.Type, _ option: String) throws -> String {
        let entry = try #require(CLITests.helpEntries(type.help).first { $0.option == option }, "\(option)")
        return try #require(entry.entry.firstMatch(of: /default: ([^)]*)\)$/).map { String($0.1) }, "\(entry.entry)")
    }

    @Test(
        """
        the default --help shows is the one the command runs with, the library's: --drain-timeout and --concurrency in \
        stream, serve and worker, --listen in serve
        """
    )
    func shownDefaultsAreUsed() throws {
        let stream = try planned(StreamCommand.self, []).plan
        let serve = try planned(ServeCommand.self, []).plan
        let worker = try planned(WorkerCommand.self, Self.required("worker", files: "")).plan.settings
        let drains: [(String, Duration)] = [
            (try Self.shownDefault(StreamCommand.self, "--drain-timeout"), stream.drainTimeout),
            (try Self.shownDefault(ServeCommand.self, "--drain-timeout"), serve.drainTimeout),
            (try Self.shownDefault(WorkerCommand.self, "--drain-timeout"), worker.drainTimeout),
        ]
        for (shown, used) in drains {
            #expect(Double(shown).map { Duration.milliseconds(Int($0 * 1000)) } == used, "shown \(shown)")
            #expect(used == ServiceRunner.defaultDrainTimeout)
        }
        let concurrencies: [(String, Int)] = [
            (try Self.shownDefault(StreamCommand.self, "--concurrency"), stream.concurrency),
            (try Self.shownDefault(ServeCommand.self, "--concurrency"), serve.settings.concurrency),
            (try Self.shownDefault(WorkerCommand.self, "--concurrency"), worker.concurrency),
        ]
        for (shown, used) in concurrencies {
            #expect(Int(shown) == used, "shown \(shown)")
            #expect(used == Enricher.Configuration.defaultConcurrency)
        }
        #expect(try Self.shownDefault(ServeCommand.self, "--listen") == serve.addresses.joined(separator: ", "))
        #expect(serve.addresses == ServiceHost.defaultAddresses)
        // The library's settings types start from the same defaults the CLI shows.
        #expect(EnrichmentService.Settings().concurrency == Enricher.Configuration.defaultConcurrency)
        #expect(WorkerCommand.defaults.concurrency == Enricher.Configuration.defaultConcurrency)
        #expect(WorkerCommand.defaults.drainTimeout == ServiceRunner.defaultDrainTimeout)
    }
}
