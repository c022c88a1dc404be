import RichPush

/// `richpush preflight`: what each phone will show of each payload's media, before a campaign is sent.
struct PreflightCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        name: "preflight",
        abstract: "Check, before a campaign is sent, what each phone will show of each payload's media.",
        discussion: """
            Each reference is downloaded and transformed completely, as enrich does (explain reads only headers),
            and gets a verdict per platform: attached as sent, attached after a transformation, or refused. An APNs
            payload's references are for iOS; an FCM v1 message's for iOS and Android. --deadline defaults to
            \(PreflightCommand.deadline.components.seconds) s here: a check before a send, not a phone's 30 s. Nothing
            is kept but what --publish-dir writes; with it, each payload is printed ready to send, every media URL
            replaced by its published copy. EXIT STATUS: 0 when every reference of every input will reach every
            platform it targets; 1 when any will not, or an input is not a payload; 64 on a usage error; 70
            (EX_SOFTWARE) when the engine cannot start (the attachments root refused, libmagic's database missing).
            """)

    /// `--deadline`'s default here: every reference downloaded and transformed whole, some over slow links.
    static let deadline: Duration = .seconds(120)

    @Flag("json", help: "One JSON object per payload instead of text.")
    var json: Bool

    @OptionGroup(EngineOptions(deadline: PreflightCommand.deadline)) var engine: EngineOptions

    @OptionGroup var payloads: PayloadFiles

    struct Plan: Sendable {
        let configuration: Enricher.Configuration
        let concurrency: Int
        let asJSON: Bool
        let inputs: [String]
    }

    func plan() throws(UsageError) -> Plan {
        Plan(
            configuration: try engine.configuration(), concurrency: engine.concurrency, asJSON: json,
            inputs: payloads.inputs)
    }

    static func run(_ plan: Plan) async -> Int32 {
        let (configuration, inputs, asJSON) = (plan.configuration, plan.inputs, plan.asJSON)
        return await withEnricher(configuration) { enricher in
            let cursor = Cursor(count: inputs.count)
            var ready = true
            var pending: [UInt8] = []
            let lost = StreamFailure(.output)
            await OrderedPipeline.run(
                concurrency: plan.concurrency,
                next: { cursor.next() },
                process: { index in
                    let input = inputs[index]
                    let preflight: Preflight
                    switch InputReader.read(input, limit: configuration.limits.payload.maximumBytes) {
                    case .success(let bytes):
                        preflight = await enricher.preflight(json: bytes, deadline: .now + configuration.timeout)
                    case .failure(let error):
                        preflight = Preflight(invalid: error)
                    }
                    let text =
                        asJSON
                        ? JSONWriter.bytes(preflight.json(input: input)) + [0x0A]
                        : Array(preflight.text(input: input).utf8) + Self.readyToSend(preflight, configuration)
                    return (text: text, ready: preflight.ready)
                },
                emit: { _, output in
                    if !output.ready { ready = false }
                    pending += output.text
                    return true
                },
                flush: {
                    defer { pending.removeAll(keepingCapacity: true) }
                    return pending.isEmpty || Output.writeResults(pending, failure: lost)
                })
            return lost.exitStatus() ?? (ready ? 0 : 1)
        }
    }

    /// With publishing, the text form ends with the payload ready to send (its JSON, exactly).
    static func readyToSend(_ preflight: Preflight, _ configuration: Enricher.Configuration) -> [UInt8] {
        guard configuration.publisher != nil, let content = preflight.content else { return [] }
        return Array("  ready to send:\n".utf8) + JSONWriter.bytes(content.json) + [0x0A]
    }
}
