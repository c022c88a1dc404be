import RichPush

#if canImport(Glibc)
    import Glibc
#endif

/// `richpush explain`: why each payload would or would not get its attachments.
struct ExplainCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        name: "explain",
        abstract: "Explain, for each payload, which conventions match and whether each reference would be attached.",
        discussion: """
            Only the headers and the first bytes of each reference are fetched, enough to tell its type; nothing is
            stored, and a missing attachments root is not made. The checks are enrich's, as far as those bytes tell (an
            image's declared pixels: a GIF's logical screen, an APNG's frames); a failure enrich would try again is a
            "retry", not a refusal. EXIT STATUS: 0, or 1 when any input is not a payload; 64 on a usage error; 70
            (EX_SOFTWARE) when the engine cannot start (an existing attachments root refused, libmagic's database
            missing).
            """)

    @Flag("json", help: "One JSON object per payload instead of text.")
    var json: Bool

    @OptionGroup var fetch: FetchOptions

    @OptionGroup var payloads: PayloadFiles

    struct Plan: Sendable {
        let configuration: Enricher.Configuration
        let asJSON: Bool
        let inputs: [String]
    }

    func plan() throws(UsageError) -> Plan {
        Plan(configuration: try fetch.configuration(), asJSON: json, inputs: payloads.inputs)
    }

    static func run(_ plan: Plan) async -> Int32 {
        var configuration = plan.configuration
        // Nothing is stored, so a root that does not exist is not made: the engine, which keeps one open, gets an
        // empty private directory instead (mkdtemp, mode 0700), removed before the command returns. A root that
        // exists is opened and checked as enrich would (a refused one exits 70), and nothing is written in it.
        var scratch: String? = nil
        var info = stat()
        if lstat(configuration.store.root, &info) != 0, errno == ENOENT {
            var template = Array((FileSystem.temporaryDirectory + "/richpush-explain-XXXXXX").utf8CString)
            if let made = mkdtemp(&template) {
                scratch = String(cString: made)
                configuration.store = AttachmentStore(root: String(cString: made))
            }
        }
        defer { if let scratch { rmdir(scratch) } }
        let asJSON = plan.asJSON
        return await withEnricher(configuration) { enricher in
            var status: Int32 = 0
            let lost = StreamFailure(.output)
            for input in plan.inputs {
                let payload: PushPayload
                do throws(PayloadError) {
                    let bytes = try InputReader.read(input, limit: configuration.limits.payload.maximumBytes).get()
                    payload = try enricher.payload(parsing: bytes)
                } catch {
                    status = 1
                    guard
                        Output.writeResults(
                            asJSON
                                ? JSONWriter.bytes(Explanation.json(input: input, invalid: error)) + [0x0A]
                                : Array(Explanation.text(input: input, invalid: error).utf8), failure: lost)
                    else { break }
                    continue
                }
                let explanation = await enricher.explain(payload, deadline: .now + configuration.timeout)
                // Written or lost: a reader gone (EPIPE) or a failed write ends the command, as enrich's results do.
                guard
                    Output.writeResults(
                        asJSON
                            ? JSONWriter.bytes(explanation.json(input: input)) + [0x0A]
                            : Array(explanation.text(input: input).utf8), failure: lost)
                else { break }
            }
            return lost.exitStatus() ?? status
        }
    }
}
