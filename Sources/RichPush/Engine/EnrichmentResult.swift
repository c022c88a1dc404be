/// What RichPush made of one payload: the mutated content, the attachments, the problems.
///
/// It encodes (`Encodable`, `jsonBytes()`) as the JSON object the CLI writes for one payload, and decodes from it
/// (`Decodable`, `init(parsing:)`): a gateway's client reads what the service returns. The attachments'
/// files are the caller's: hand them on, then remove them (`Enricher.removeAttachments(of:)`, or `richpush gc`).
public struct EnrichmentResult: Sendable, Hashable, Codable {
    /// How it ended.
    public var outcome: EnrichmentResult.Outcome {
        get { stored.fields.outcome }
        set { stored.fields.outcome = newValue }
    }
    /// The payload with its mutations, or nil when the input was not a payload.
    public var content: PushPayload? {
        get { stored.fields.content }
        set { stored.fields.content = newValue }
    }
    /// The attachments, in reference order.
    public var attachments: [EnrichmentResult.Attachment] {
        get { stored.fields.attachments }
        set { stored.fields.attachments = newValue }
    }
    /// Where the app should go when the notification is opened, when the payload says.
    public var route: DeepLinkRoute? {
        get { stored.fields.route }
        set { stored.fields.route = newValue }
    }
    /// Everything a user should hear, in the order found.
    public var problems: [EnrichmentProblem] {
        get { stored.fields.problems }
        set { stored.fields.problems = newValue }
    }
    /// Time from the start of processing to the result.
    public var elapsed: Duration {
        get { stored.fields.elapsed }
        set { stored.fields.elapsed = newValue }
    }
    /// The input's name as the output's `input` member writes it (a path, `-`, `-:<line>`, a request id); nil
    /// writes no `input` member. `enrich(json:source:)` sets it to the source; `enrich(_:deadline:)` leaves it nil.
    public var input: String? {
        get { stored.fields.input }
        set { stored.fields.input = newValue }
    }
    /// What the input was read as (an APNs payload or an FCM v1 message) and what decided it; nil for an input that
    /// is not a payload.
    public var format: PayloadFormat? {
        get { stored.fields.format }
        set { stored.fields.format = newValue }
    }

    /// The stored fields, as the accessors above say them, in one box the result's copies share (`SharedFields`):
    /// the value is one pointer (inline, 192 bytes), held across the suspensions of every payload's async functions
    /// and in the slots of their frames while the payload waits.
    private struct Fields: Hashable, Sendable {
        var outcome: EnrichmentResult.Outcome
        var content: PushPayload?
        var attachments: [EnrichmentResult.Attachment]
        var route: DeepLinkRoute?
        var problems: [EnrichmentProblem]
        var elapsed: Duration
        var input: String?
        var format: PayloadFormat?
    }

    /// Where the fields are: the value's one stored property.
    private var stored: SharedFields<Fields>

    /// A result (for test doubles and callers that build results themselves).
    public init(
        outcome: EnrichmentResult.Outcome, content: PushPayload?, attachments: [EnrichmentResult.Attachment] = [],
        route: DeepLinkRoute? = nil,
        problems: [EnrichmentProblem] = [], elapsed: Duration = .zero, input: String? = nil,
        format: PayloadFormat? = nil
    ) {
        stored = SharedFields(
            Fields(
                outcome: outcome, content: content, attachments: attachments, route: route, problems: problems,
                elapsed: elapsed, input: input, format: format))
    }

    /// The JSON object RichPush writes for this payload, as one line's bytes without the newline: exactly what
    /// the CLI prints (`content` lossless: keys in order, duplicates, numbers and escapes as they came).
    public func jsonBytes() -> [UInt8] {
        var writer = Self.writer(for: attachments)
        write(into: &writer, input: input)
        return writer.bytes
    }

    /// Encodes the object `jsonBytes()` writes. Through a `JSONEncoder`, `content` is as lossless as the encoder
    /// allows: a number becomes an `Int64` when it is one, else a `Double`; a duplicate key keeps what the encoder
    /// keeps; a lone surrogate in a string is replaced. Use `jsonBytes()` where the content must be byte-exact.
    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }

    /// Decodes the object `encode(to:)` and `jsonBytes()` write. What the output does not hold is not known: the
    /// attachments' validators, dimensions and damage, a failed publication (its problem is in `problems`), and
    /// `elapsed` beyond the tenth of a millisecond. Through a `JSONDecoder`, `content` is as exact as the decoder
    /// allows (it gives an object's members in no order, numbers as `Int64` or `Double`); `init(parsing:)` keeps it
    /// byte-exact.
    public init(from decoder: any Decoder) throws {
        self = try PushPayload.JSON.decode(decoder, Self.init(json:path:))
    }

    /// Parses one line of RichPush's output (`jsonBytes()`, a line of `enrich`, `stream`, `serve` or `worker`),
    /// `content` exactly as written: the same members in the same order, numbers and escapes as they are.
    /// - Throws: `PayloadError` when the bytes are not JSON, `DecodingError` when they are not a result.
    public init(parsing bytes: some Collection<UInt8>) throws {
        var limits = JSONParser.Limits()
        limits.maximumBytes = .max  // a line holds a payload and more; the parser's own bound still holds
        limits.maximumDepth = 256
        try self.init(json: try JSONParser(limits: limits).parse(bytes), path: "")
    }

    /// The result in `json`, the object `json` writes.
    package init(json: PushPayload.JSON, path: String) throws {
        let fields = try JSONFields(json, path: path)
        let outcome = try fields.required(fields.string("outcome"), "outcome")
        guard let known = Outcome(rawValue: outcome) else {
            throw JSONFields.error("outcome", "'\(outcome)' is not an outcome")
        }
        let content = try fields.object("content") { json, path in try PushPayload(JSONFields(json, path: path).object)
        }
        let elapsed = try fields.required(fields.value("elapsed_ms"), "elapsed_ms")
        guard case .number(let milliseconds) = elapsed, let tenths = Self.tenths(milliseconds) else {
            throw JSONFields.error("elapsed_ms", "expected milliseconds, got \(elapsed.kindDescription)")
        }
        self.init(
            outcome: known, content: content,
            attachments: try fields.required(
                fields.elements("attachments", Attachment.init(json:path:)), "attachments"),
            route: try fields.object("route", DeepLinkRoute.init(json:path:)),
            problems: try fields.required(fields.elements("problems", EnrichmentProblem.init(json:path:)), "problems"),
            elapsed: .microseconds(tenths * 100), input: try fields.string("input"),
            format: try fields.object("format", PayloadFormat.init(json:path:)))
    }

    /// `12.5` as 125 tenths; nil for text that is not a number of milliseconds. A decoder may give `12.5` back
    /// as `12.500000000000002` or `12` as `12`: the tenths are rounded.
    private static func tenths(_ text: String) -> Int64? {
        guard let milliseconds = Double(text), milliseconds >= 0, milliseconds < 1e15 else { return nil }
        return Int64((milliseconds * 10).rounded())
    }

    /// The result as the JSON object RichPush writes, one per payload (see docs/output.md for the format), with
    /// `input` as its `input` member.
    public func json(input: String) -> PushPayload.JSON {
        var result = self
        result.input = input
        return result.json
    }

    /// The result as the JSON object RichPush writes, with `input` only when set. The reference that `line(input:)`
    /// and `jsonBytes()`, which write the same bytes without making this tree, are tested against.
    var json: PushPayload.JSON {
        var members: [(key: String, value: PushPayload.JSON)] = []
        if let input { members.append(("input", .text(input))) }
        members.append(("outcome", .text(outcome.rawValue)))
        if let format { members.append(("format", format.json)) }
        members.append(("content", content?.json ?? .null))
        members.append(("attachments", .array(attachments.map(\.json))))
        if let route { members.append(("route", route.json)) }
        members.append(("problems", .array(problems.map(\.json))))
        members.append(("elapsed_ms", Self.milliseconds(elapsed)))
        return .object(JSONObject(members))
    }

    /// `elapsed` as the output's `elapsed_ms` writes it: milliseconds to the tenth (`12.5`), without Foundation's
    /// String(format:).
    static func milliseconds(_ elapsed: Duration) -> PushPayload.JSON {
        let tenths = tenths(of: elapsed)
        return .number("\(tenths / 10).\(tenths % 10)")
    }

    /// `elapsed` in tenths of a millisecond, rounded down.
    static func tenths(of elapsed: Duration) -> Int {
        Int(elapsed.components.seconds * 10_000 + elapsed.components.attoseconds / 100_000_000_000_000)
    }

    /// The result for an input that is not a payload.
    public static func invalid(_ error: PayloadError, source: String, elapsed: Duration = .zero) -> EnrichmentResult {
        EnrichmentResult(
            outcome: .invalid, content: nil, attachments: [],
            problems: [EnrichmentProblem(source: source, code: error.code, detail: error.detail)],
            elapsed: elapsed)
    }
}

extension EnrichmentResult: CustomReflectable {
    /// Its fields, as a struct's are shown (`dump`, a test's failed expectation), rather than its box.
    public var customMirror: Mirror { stored.mirror(of: self) }
}
