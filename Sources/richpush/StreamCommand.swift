import RichPush

#if canImport(Glibc)
    import Glibc
#endif

/// `richpush stream`: NDJSON payloads in, NDJSON results out, in input order.
struct StreamCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        name: "stream",
        abstract: "Attach the media of NDJSON payloads on standard input; write NDJSON results in input order.",
        discussion: """
            Each non-empty line is one payload; a line that is not a payload yields an 'invalid' result and the
            stream goes on. Each result's "input" is "-:<line number>". Each payload's deadline starts when its
            processing starts. Results are written, and flushed, as soon as every earlier one is out. End of input
            drains the work in progress and exits 0. EXIT STATUS: 0 at the end of the input or after a drain
            (SIGTERM, SIGINT); 64 on a usage error; 70 (EX_SOFTWARE) when the engine cannot start (the attachments
            root refused, libmagic's database missing); 74 (EX_IOERR) when standard input could not be read or results
            could not be written (standard output failed, or took nothing for a second after a drain's timeout).
            """)

    @OptionGroup var engine: EngineOptions

    @OptionGroup var drain: DrainOptions

    struct Plan: Sendable {
        let configuration: Enricher.Configuration
        let concurrency: Int
        let drainTimeout: Duration
    }

    func plan() throws(UsageError) -> Plan {
        Plan(configuration: try engine.configuration(), concurrency: engine.concurrency, drainTimeout: drain.timeout)
    }

    static func run(_ plan: Plan) async -> Int32 {
        let (configuration, concurrency, drainTimeout) = (plan.configuration, plan.concurrency, plan.drainTimeout)
        let lost = StreamFailure(.output)
        let unread = StreamFailure(.input)
        return await withEnricher(configuration) { enricher in
            // SIGTERM or SIGINT drains: reading stops, the payloads in flight finish (each by its deadline, or
            // cancelled at the drain timeout) and their results are written, then the command exits 0. The end of
            // the input drains the same way, without the timeout.
            let runner = ServiceRunner(drainTimeout: drainTimeout)
            let stream = ClosureService {
                let progress = Progress(total: nil, enabled: Progress.shouldShow(inputs: nil))
                var pending: [UInt8] = []
                var reader = LineReader(descriptor: 0, limit: configuration.limits.payload.maximumBytes)
                var lineNumber = 0
                // The reader thread hands over every line already buffered at once (up to 256): one thread handoff
                // per batch instead of per line, which showed in the campaign profile.
                let source = ThreadedSource<[NDJSONEnrichment.Line]> {
                    var batch: [NDJSONEnrichment.Line] = []
                    while batch.count < 256, batch.isEmpty || reader.hasBufferedLine, let line = reader.next() {
                        lineNumber += 1
                        let item = NDJSONEnrichment.Line(number: lineNumber, line: line)
                        if !item.isBlank { batch.append(item) }
                    }
                    if batch.isEmpty, let failure = reader.failure {
                        unread.record("\(String(cString: strerror(failure))) after line \(lineNumber)")
                    }
                    return batch.isEmpty ? nil : batch
                }
                let lines = Unbatcher(source)
                await withGracefulShutdownHandler {
                    await NDJSONEnrichment.run(
                        enricher: enricher,
                        concurrency: concurrency,
                        timeout: configuration.timeout,
                        input: { "-:\($0)" },
                        next: { await lines.next() },
                        ready: { lines.available() },
                        emit: { line in
                            progress.advance()
                            pending += line
                        },
                        flush: {
                            defer { pending.removeAll(keepingCapacity: true) }
                            guard pending.isEmpty || Output.writeResults(pending, failure: lost) else {
                                // Nothing more can be written: reading stops now, where it would wait for the next
                                // line (an input held open and idle kept the command from exiting).
                                source.stop()
                                return false
                            }
                            return true
                        })
                } onGracefulShutdown: {
                    source.stop()
                    Output.exitWhenResultsBlocked(afterDrain: drainTimeout)
                }
                progress.finish()
            }
            try? await runner.run([stream], enricher: enricher)
            let unreadStatus = unread.exitStatus()
            return lost.exitStatus() ?? unreadStatus ?? 0
        }
    }
}
