import RichPush

#if canImport(Glibc)
    import Glibc
#endif

/// `richpush enrich`: one payload per file.
struct EnrichCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        name: "enrich",
        abstract: "Attach the media of push payload files; print one JSON result per input.",
        discussion: """
            EXIT STATUS: 0 when every input was processed, whatever its outcome; 1 when any input was invalid (the
            others are still processed and written); 64 on a usage error; 70 (EX_SOFTWARE) when the engine cannot
            start (the attachments root refused, libmagic's database missing).
            """)

    @Option(
        "out", .text("dir"),
        help: "Write each result to DIR/<input file name> (atomically) instead of standard output.")
    var out: String?

    @OptionGroup var engine: EngineOptions

    @OptionGroup var payloads: PayloadFiles

    struct Plan: Sendable {
        let configuration: Enricher.Configuration
        let concurrency: Int
        let inputs: [String]
        /// Where each input's result is written, or nil for standard output.
        let outputs: [String]?
    }

    func plan() throws(UsageError) -> Plan {
        let configuration = try engine.configuration()
        let inputs = payloads.inputs
        var outputs: [String]? = nil
        if let out { outputs = try outputPaths(inputs, directory: out) }
        return Plan(configuration: configuration, concurrency: engine.concurrency, inputs: inputs, outputs: outputs)
    }

    static func run(_ plan: Plan) async -> Int32 {
        let (configuration, concurrency, inputs, outputs) = (
            plan.configuration, plan.concurrency, plan.inputs, plan.outputs
        )
        return await withEnricher(configuration) { enricher in
            let limit = configuration.limits.payload.maximumBytes
            let cursor = Cursor(count: inputs.count)
            var sawInvalid = false
            var writeFailure: String? = nil
            let lost = StreamFailure(.output)
            let progress = Progress(total: inputs.count, enabled: Progress.shouldShow(inputs: inputs.count))
            defer { progress.finish() }
            var pending: [UInt8] = []
            await OrderedPipeline.run(
                concurrency: concurrency,
                next: { cursor.next() },
                process: { index in
                    let input = inputs[index]
                    let deadline = ContinuousClock.now + configuration.timeout
                    let result: EnrichmentResult
                    switch InputReader.read(input, limit: limit) {
                    case .success(let bytes):
                        result = await enricher.enrich(json: bytes, source: input, deadline: deadline)
                    case .failure(let error): result = .invalid(error, source: input)
                    }
                    let line = result.line(input: input)
                    return (line: line, invalid: result.outcome == .invalid)
                },
                emit: { index, result in
                    progress.advance()
                    if result.invalid { sawInvalid = true }
                    if let outputs {
                        do {
                            try Output.writeAtomically(result.line, to: outputs[index])
                        } catch {
                            writeFailure = "\(error)"
                            Output.error("richpush: \(error)")
                        }
                        return true
                    }
                    pending += result.line
                    return true
                },
                flush: {
                    defer { pending.removeAll(keepingCapacity: true) }
                    return pending.isEmpty || Output.writeResults(pending, failure: lost)
                })
            if let status = lost.exitStatus() { return status }
            if writeFailure != nil { return 1 }
            return sawInvalid ? 1 : 0
        }
    }

    /// `DIR/<name>` for each input; two inputs with one name would overwrite each other, and an input at its own
    /// output path would be overwritten by its result: usage errors, before anything runs.
    func outputPaths(_ inputs: [String], directory: String) throws(UsageError) -> [String] {
        var info = stat()
        guard stat(directory, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw UsageError("\($out.flag): '\(directory)' is not a directory")
        }
        var seen: [String: String] = [:]
        var paths: [String] = []
        for input in inputs {
            let name = input == "-" ? "stdin.json" : Path.lastComponent(input)
            // `.`, `..` or `/` would name DIR itself, its parent or DIR/ (a rename onto a directory).
            guard !["", ".", ".."].contains(name) else {
                throw UsageError("\($out.flag): input '\(input)' ends in no file name to write its result to")
            }
            if let other = seen[name] {
                throw UsageError(
                    "\($out.flag): inputs '\(other)' and '\(input)' would both be written to \(directory)/\(name)")
            }
            seen[name] = input
            let path = directory + "/" + name
            // An input in DIR itself (or a link to it there) would be replaced by its own result.
            var source = stat()
            var target = stat()
            if input != "-", stat(input, &source) == 0, stat(path, &target) == 0, source.st_dev == target.st_dev,
                source.st_ino == target.st_ino
            {
                throw UsageError("\($out.flag): input '\(input)' is \(path): its result would replace it")
            }
            paths.append(path)
        }
        return paths
    }
}
