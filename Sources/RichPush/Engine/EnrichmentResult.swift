/// What RichPush made of one payload: the mutated content, the attachments, the problems.
///
/// It encodes (`Encodable`, `jsonBytes()`) as the JSON object the CLI writes for one payload. The attachments'
/// files are the caller's: hand them on, then remove them (`Enricher.removeAttachments(of:)`, or `richpush gc`).
public struct EnrichmentResult: Sendable, Encodable {
    /// How it ended.
    public var outcome: EnrichmentResult.Outcome
    /// The payload with its mutations, or nil when the input was not a payload.
    public var content: PushPayload?
    /// The attachments, in reference order.
    public var attachments: [EnrichmentResult.Attachment]
    /// Where the app should go when the notification is opened, when the payload says.
    public var route: DeepLinkRoute? = nil
    /// Everything a user should hear, in the order found.
    public var problems: [EnrichmentProblem]
    /// Time from the start of processing to the result.
    public var elapsed: Duration
    /// The input's name as the output's `input` member writes it (a path, `-`, `-:<line>`, a request id); nil
    /// writes no `input` member. `enrich(json:source:)` sets it to the source; `enrich(_:deadline:)` leaves it nil.
    public var input: String? = nil

    /// A result (for test doubles and callers that build results themselves).
    public init(
        outcome: EnrichmentResult.Outcome, content: PushPayload?, attachments: [EnrichmentResult.Attachment] = [], route: DeepLinkRoute? = nil,
        problems: [EnrichmentProblem] = [], elapsed: Duration = .zero, input: String? = nil
    ) {
        self.outcome = outcome
        self.content = content
        self.attachments = attachments
        self.route = route
        self.problems = problems
        self.elapsed = elapsed
        self.input = input
    }

    /// The JSON object RichPush writes for this payload, as one line's bytes without the newline: exactly what
    /// the CLI prints (`content` lossless: keys in order, duplicates, numbers and escapes as they came).
    public func jsonBytes() -> [UInt8] {
        JSONWriter.bytes(json)
    }

    /// Encodes the object `jsonBytes()` writes. Through a `JSONEncoder`, `content` is as lossless as the encoder
    /// allows: a number becomes an `Int64` when it is one, else a `Double`; a duplicate key keeps what the encoder
    /// keeps; a lone surrogate in a string is replaced. Use `jsonBytes()` where the content must be byte-exact.
    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }

    /// The result as the JSON object RichPush writes, one per payload (see the README for the format), with
    /// `input` as its `input` member.
    public func json(input: String) -> PushPayload.JSON {
        var result = self
        result.input = input
        return result.json
    }

    /// The result as the JSON object RichPush writes, with `input` only when set.
    private var json: PushPayload.JSON {
        let attachmentValues: [PushPayload.JSON] = attachments.map { attachment in
            var members: [(key: String, value: PushPayload.JSON)] = [
                ("identifier", .text(attachment.identifier)),
                ("path", .text(attachment.media.path)),
                ("source", .text(attachment.source)),
                ("convention", .text(attachment.convention)),
                ("type", .text(attachment.media.type.uti)),
                ("mime", .text(attachment.media.type.mime)),
                ("bytes", .integer(attachment.media.bytes)),
                ("sha256", .text(attachment.media.sha256)),
            ]
            if let transformation = attachment.media.transformation {
                let original = transformation.original
                members.append(("transformed", .array(transformation.steps.map { .text($0.rawValue) })))
                members.append(
                    (
                        "original",
                        .object(
                            JSONObject([
                                ("type", .text(original.type.uti)), ("mime", .text(original.type.mime)),
                                ("bytes", .integer(original.bytes)), ("sha256", .text(original.sha256)),
                            ])
                        )
                    ))
            }
            if case .published(let url)? = attachment.media.publication { members.append(("published_url", .text(url))) }
            if let hint = attachment.typeHint { members.append(("type_hint", .text(hint))) }
            if let thumbnail = attachment.thumbnail { members.append(("thumbnail", thumbnail.json)) }
            members.append(("attempts", .integer(attachment.attempts)))
            return .object(JSONObject(members))
        }
        let problemValues: [PushPayload.JSON] = problems.map { problem in
            .object(
                JSONObject([
                    ("source", .text(problem.source)), ("code", .text(problem.code.rawValue)),
                    ("detail", .text(problem.detail)),
                ] + (problem.attempts.map { [("attempts", .integer($0))] } ?? [])))
        }
        // Tenths of a millisecond, written without Foundation's String(format:).
        let tenths = elapsed.components.seconds * 10_000 + elapsed.components.attoseconds / 100_000_000_000_000
        var members: [(key: String, value: PushPayload.JSON)] = []
        if let input { members.append(("input", .text(input))) }
        members.append(("outcome", .text(outcome.rawValue)))
        members.append(("content", content?.json ?? .null))
        members.append(("attachments", .array(attachmentValues)))
        if let route { members.append(("route", route.json)) }
        members.append(("problems", .array(problemValues)))
        members.append(("elapsed_ms", .number("\(tenths / 10).\(tenths % 10)")))
        return .object(JSONObject(members))
    }

    /// The result for an input that is not a payload.
    public static func invalid(_ error: PayloadError, source: String, elapsed: Duration = .zero) -> EnrichmentResult {
        EnrichmentResult(
            outcome: .invalid, content: nil, attachments: [],
            problems: [EnrichmentProblem(source: source, code: error.code, detail: error.detail)],
            elapsed: elapsed)
    }
}
