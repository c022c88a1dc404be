#if canImport(Glibc)
    import Glibc
#endif
import RichPush

/// `richpush enrich`: one payload per file.
enum EnrichCommand {
    static let spec = CommandSpec(
        name: "enrich",
        abstract: "Attach the media of push payload files; print one JSON result per input.",
        usage: "richpush enrich [<options>] [<file> ...]",
        arguments: [("<file>", "A payload JSON file; '-' or none reads one payload from standard input.")],
        options: [
            OptionSpec(
                name: "out", value: "dir",
                help: "Write each result to DIR/<input file name> (atomically) instead of standard output. (default: none)")
        ] + SharedOptions.specs,
        discussion: """
            EXIT STATUS: 0 when every input was processed, whatever its outcome; 1 when any input was invalid (the
            others are still processed and written); 64 on a usage error.
            """)

    static func run(_ arguments: [String]) async throws(UsageError) -> Int32 {
        guard let parsed = try spec.parseOrShowHelp(arguments) else { return 0 }
        let configuration = try SharedOptions.configuration(parsed)
        let concurrency = try SharedOptions.concurrency(parsed)
        let inputs = parsed.positionals.isEmpty ? ["-"] : parsed.positionals
        var outputs: [String]? = nil
        if let directory = parsed.value("out") {
            outputs = try outputPaths(inputs, directory: directory)
        }
        return try await withEnricher(configuration) { enricher throws(UsageError) in
            let limit = configuration.limits.payload.maximumBytes
            let cursor = Cursor(count: inputs.count)
            var sawInvalid = false
            var writeFailure: String? = nil
            let progress = Progress(total: inputs.count, enabled: Progress.shouldShow(inputs: inputs.count))
            defer { progress.finish() }
            var pending: [UInt8] = []
            await OrderedPipeline.run(
                concurrency: concurrency,
                next: { cursor.next() },
                process: { index in
                    let input = inputs[index]
                    let deadline = ContinuousClock.now + configuration.deadline
                    let result: EnrichmentResult
                    switch InputReader.read(input, limit: limit) {
                    case .success(let bytes): result = await enricher.enrich(json: bytes, source: input, deadline: deadline)
                    case .failure(let error): result = .invalid(error, source: input)
                    }
                    return JSONWriter.bytes(result.json(input: input)) + [0x0A] + (result.outcome == .invalid ? [1] : [0])
                },
                emit: { index, encoded in
                    progress.advance()
                    if encoded.last == 1 { sawInvalid = true }
                    let line = Array(encoded.dropLast())
                    if let outputs {
                        do {
                            try Output.writeAtomically(line, to: outputs[index])
                        } catch {
                            writeFailure = "\(error)"
                            Output.error("richpush: \(error)")
                        }
                        return true
                    }
                    pending += line
                    return true
                },
                flush: {
                    defer { pending.removeAll(keepingCapacity: true) }
                    return pending.isEmpty || Output.write(pending)
                })
            if writeFailure != nil { return 1 }
            return sawInvalid ? 1 : 0
        }
    }

    /// `DIR/<name>` for each input; two inputs with one name would overwrite each other, which is a usage error.
    static func outputPaths(_ inputs: [String], directory: String) throws(UsageError) -> [String] {
        var info = stat()
        guard stat(directory, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw UsageError("--out: '\(directory)' is not a directory")
        }
        var seen: [String: String] = [:]
        var paths: [String] = []
        for input in inputs {
            let name = input == "-" ? "stdin.json" : Path.lastComponent(input)
            if let other = seen[name] {
                throw UsageError("--out: inputs '\(other)' and '\(input)' would both be written to \(directory)/\(name)")
            }
            seen[name] = input
            paths.append(directory + "/" + name)
        }
        return paths
    }
}

/// `richpush stream`: NDJSON payloads in, NDJSON results out, in input order.
enum StreamCommand {
    static let spec = CommandSpec(
        name: "stream",
        abstract: "Attach the media of NDJSON payloads on standard input; write NDJSON results in input order.",
        usage: "richpush stream [<options>]",
        arguments: [],
        options: SharedOptions.specs,
        discussion: """
            Each non-empty line is one payload; a line that is not a payload yields an 'invalid' result and the
            stream goes on. Each result's "input" is "-:<line number>". Each payload's deadline starts when its
            processing starts. Results are written, and flushed, as soon as every earlier one is out. End of input
            drains the work in progress and exits 0.
            """)

    static func run(_ arguments: [String]) async throws(UsageError) -> Int32 {
        guard let parsed = try spec.parseOrShowHelp(arguments) else { return 0 }
        if !parsed.positionals.isEmpty {
            throw UsageError("stream reads standard input; unexpected argument '\(parsed.positionals[0])'")
        }
        let configuration = try SharedOptions.configuration(parsed)
        let concurrency = try SharedOptions.concurrency(parsed)
        return try await withEnricher(configuration) { enricher throws(UsageError) in
            let progress = Progress(total: nil, enabled: Progress.shouldShow(inputs: nil))
            var pending: [UInt8] = []
            var reader = LineReader(descriptor: 0, limit: configuration.limits.payload.maximumBytes)
            var lineNumber = 0
            // The reader thread hands over every line already buffered at once (up to 256): one thread handoff per
            // batch instead of per line, which showed in the campaign profile.
            let source = ThreadedSource<[NDJSONEnrichment.Line]> {
                var batch: [NDJSONEnrichment.Line] = []
                while batch.count < 256, batch.isEmpty || reader.hasBufferedLine, let line = reader.next() {
                    lineNumber += 1
                    let item = NDJSONEnrichment.Line(number: lineNumber, line: line)
                    if !item.isBlank { batch.append(item) }
                }
                return batch.isEmpty ? nil : batch
            }
            // SIGTERM or SIGINT drains: reading stops, the payloads in flight finish (each by its deadline) and
            // their results are written, then the command exits 0.
            let signals = TerminationSignals { source.stop() }
            let lines = Unbatcher(source)
            await NDJSONEnrichment.run(
                enricher: enricher,
                concurrency: concurrency,
                timeout: configuration.deadline,
                input: { "-:\($0)" },
                next: { await lines.next() },
                emit: { line in
                    progress.advance()
                    pending += line
                },
                flush: {
                    defer { pending.removeAll(keepingCapacity: true) }
                    return pending.isEmpty || Output.write(pending)
                })
            progress.finish()
            withExtendedLifetime(signals) {}
            return 0
        }
    }
}

/// `richpush gc`: removes old attachment directories.
enum GCCommand {
    static let spec = CommandSpec(
        name: "gc",
        abstract: "Remove attachment directories older than a given age.",
        usage: "richpush gc --older-than <seconds> [--attachments-dir <dir>]",
        arguments: [],
        options: [
            OptionSpec(
                name: "older-than", value: "seconds",
                help: "Remove directories last changed longer ago than this, \(ParsedArguments.describe(ageRange)). (required)"),
            OptionSpec(name: "attachments-dir", value: "dir", help: "The attachments root. (default: $TMPDIR/richpush)"),
        ],
        discussion: """
            Only directories named as RichPush names them (a UUID) are removed, by descriptors: a symbolic link is
            removed, never followed, and nothing on another file system is entered. Prints how many. EXIT STATUS:
            0; 64 on a usage error; 70 when the root is refused (a symbolic link, another user's, writable by group
            or others) or cannot be read.
            """)

    /// `--older-than`: up to a hundred years, older than any file this machine holds; 0 takes everything.
    static let ageRange = 0.0...3_153_600_000.0

    static func run(_ arguments: [String]) throws(UsageError) -> Int32 {
        guard let parsed = try spec.parseOrShowHelp(arguments) else { return 0 }
        if !parsed.positionals.isEmpty { throw UsageError("gc: unexpected argument '\(parsed.positionals[0])'") }
        guard let age = try parsed.seconds("older-than", in: ageRange) else {
            throw UsageError("gc: --older-than <seconds> is required")
        }
        let root = parsed.value("attachments-dir") ?? AttachmentStore.defaultRoot
        do {
            let removed = try AttachmentStore(root: root).collectGarbage(olderThan: age)
            Output.write(Array("removed \(removed) attachment directories from \(root)\n".utf8))
            return 0
        } catch {
            // As enrich, stream and explain exit when the root is refused (see makeEnricher).
            Output.error("richpush gc: \(error.detail)")
            return 70
        }
    }
}

/// Hands out input indexes 0..<count, one at a time.
final class Cursor: Sendable {
    private let position = LockedValue(0)
    private let count: Int

    init(count: Int) { self.count = count }

    func next() -> Int? {
        position.withLock { position in
            guard position < count else { return nil }
            defer { position += 1 }
            return position
        }
    }
}

/// Runs `body` with an enricher made from `configuration`, then shuts it down (awaited: its cache's links are
/// gone before the command returns), whether `body` returns or throws. Exits 70 when it cannot be made.
func withEnricher(
    _ configuration: Configuration, _ body: (Enricher) async throws(UsageError) -> Int32
) async throws(UsageError) -> Int32 {
    let enricher: Enricher
    do {
        enricher = try Enricher(configuration: configuration)
    } catch {
        Output.error("richpush: \(error)")
        exit(70)
    }
    let status: Result<Int32, UsageError>
    do throws(UsageError) {
        status = .success(try await body(enricher))
    } catch {
        status = .failure(error)
    }
    await enricher.shutdown()
    return try status.get()
}

/// `richpush explain`: why each payload would or would not get its attachments.
enum ExplainCommand {
    static let spec = CommandSpec(
        name: "explain",
        abstract: "Explain, for each payload, which conventions match and whether each reference would be attached.",
        usage: "richpush explain [--json] [<options>] [<file> ...]",
        arguments: [("<file>", "A payload JSON file; '-' or none reads one payload from standard input.")],
        options: [OptionSpec(name: "json", value: nil, help: "One JSON object per payload instead of text. (default: text)")]
            + SharedOptions.specs,
        discussion: """
            Only the headers and the first bytes of each reference are fetched, enough to tell its type; nothing
            is stored. EXIT STATUS: 0, or 1 when any input is not a payload; 64 on a usage error.
            """)

    static func run(_ arguments: [String]) async throws(UsageError) -> Int32 {
        guard let parsed = try spec.parseOrShowHelp(arguments) else { return 0 }
        let configuration = try SharedOptions.configuration(parsed)
        return try await withEnricher(configuration) { enricher throws(UsageError) in
            let asJSON = parsed.has("json")
            var status: Int32 = 0
            for input in parsed.positionals.isEmpty ? ["-"] : parsed.positionals {
                let payload: Payload
                do throws(PayloadError) {
                    let bytes = try InputReader.read(input, limit: configuration.limits.payload.maximumBytes).get()
                    payload = try Payload(parsing: bytes, limits: configuration.limits.payload)
                } catch {
                    status = 1
                    if asJSON {
                        Output.write(JSONWriter.bytes(Explanation.json(input: input, invalid: error)) + [0x0A])
                    } else {
                        Output.write(Array("\(input)\n  not a payload: \(error.code) (\(error.detail))\n".utf8))
                    }
                    continue
                }
                let explanation = await enricher.explain(payload, deadline: .now + configuration.deadline)
                Output.write(asJSON ? JSONWriter.bytes(explanation.json(input: input)) + [0x0A] : Array(explanation.text(input: input).utf8))
            }
            return status
        }
    }
}

/// `richpush render`: expands an Azure Notification Hubs template with its properties.
enum RenderCommand {
    static let spec = CommandSpec(
        name: "render",
        abstract: "Expand a template notification (Azure Notification Hubs expressions) into a payload.",
        usage: "richpush render --template <file> --params <file> [--strict]",
        arguments: [],
        options: [
            OptionSpec(name: "template", value: "file", help: "The template: a JSON payload whose string values may be expressions. (required)"),
            OptionSpec(name: "params", value: "file", help: "The properties: a JSON object of name to string or number. (required)"),
            OptionSpec(name: "strict", value: nil, help: "A missing property is an error instead of an empty string. (default: off)"),
        ],
        discussion: """
            Expressions: $(prop), $(prop, n), .(prop), .(prop, n), %(prop), #(prop), and {e1 + 'literal' + e2}.
            Prints the payload as one line of JSON. EXIT STATUS: 0; 1 when the template cannot be rendered (the
            message names the expression or property); 64 on a usage error.
            """)

    static func run(_ arguments: [String]) throws(UsageError) -> Int32 {
        guard let parsed = try spec.parseOrShowHelp(arguments) else { return 0 }
        if !parsed.positionals.isEmpty { throw UsageError("render: unexpected argument '\(parsed.positionals[0])'") }
        guard let templatePath = parsed.value("template") else { throw UsageError("render: --template <file> is required") }
        guard let paramsPath = parsed.value("params") else { throw UsageError("render: --params <file> is required") }
        let template = try load(templatePath, option: "--template")
        let params = try load(paramsPath, option: "--params")
        do {
            let renderer = try TemplateRenderer(properties: params, strict: parsed.has("strict"))
            let rendered = try renderer.render(template)
            Output.write(JSONWriter.bytes(rendered) + [0x0A])
            return 0
        } catch {
            Output.error("richpush render: \(error.message)")
            return 1
        }
    }

    private static func load(_ path: String, option: String) throws(UsageError) -> JSONValue {
        do throws(PayloadError) {
            return try JSONParser().parse(try InputReader.read(path, limit: 1 << 20).get())
        } catch {
            throw UsageError("\(option) \(path): \(error.code) (\(error.detail))")
        }
    }
}
