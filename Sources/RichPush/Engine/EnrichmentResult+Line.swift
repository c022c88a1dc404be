extension EnrichmentResult {
    /// The output line for this payload, named `input`, and its newline: exactly
    /// `JSONWriter.bytes(json(input: input)) + [0x0A]`, written straight into one buffer without making the
    /// `PushPayload.JSON` tree first. What `enrich`, `stream` and `serve` write per payload (`worker` without the
    /// newline).
    ///
    /// Measured on the campaign (10,000 payloads, media-cache hits, ~800-byte lines): making the tree and writing it
    /// were ~10% of the CPU of `richpush stream` (member arrays, a `JSONObject` per object, a string per number,
    /// the line copied again for its newline); written straight, the whole process's CPU is 0.93x (15 alternated
    /// pairs, 0.87-0.95).
    package func line(input: String) -> [UInt8] {
        var writer = Self.writer(for: attachments)
        write(into: &writer, input: input)
        writer.raw(0x0A)
        return writer.bytes
    }

    /// The JSON object RichPush writes for this payload, named `input`, without a newline: exactly
    /// `JSONWriter.bytes(json(input: input))`, written as `line(input:)` writes it.
    package func jsonBytes(input: String) -> [UInt8] {
        var writer = Self.writer(for: attachments)
        write(into: &writer, input: input)
        return writer.bytes
    }

    /// A writer with room for most results with these attachments: a line is ~350 bytes and ~450 per attachment
    /// beside the content.
    static func writer(for attachments: [Attachment]) -> JSONStreamWriter {
        JSONStreamWriter(capacity: 1024 + 512 * attachments.count)
    }

    /// The object `json` writes (`input` in place of the result's own), member by member, in its order.
    func write(into writer: inout JSONStreamWriter, input: String?) {
        writer.openObject()
        if let input { writer.member("input", input) }
        writer.member("outcome", outcome.rawValue)
        if let format {
            writer.key("format")
            writer.openObject()
            writer.member("name", format.name.rawValue)
            writer.member("decided_by", format.decidedBy)
            if format.name == .fcmV1 {
                writer.key("wrapped")
                writer.bool(format.wrapped)
            }
            writer.closeObject()
        }
        writer.member("content", content?.json ?? .null)
        writer.key("attachments")
        writer.openArray()
        for attachment in attachments { attachment.write(into: &writer) }
        writer.closeArray()
        if let route { writer.member("route", route.json) }
        writer.key("problems")
        writer.openArray()
        for problem in problems { Self.write(problem, into: &writer) }
        writer.closeArray()
        writer.key("elapsed_ms")
        writer.tenths(Self.tenths(of: elapsed))
        writer.closeObject()
    }

    /// A problem as `EnrichmentProblem.json` writes it.
    private static func write(_ problem: EnrichmentProblem, into writer: inout JSONStreamWriter) {
        writer.openObject()
        writer.member("source", problem.source)
        writer.member("code", problem.code.rawValue)
        writer.member("detail", problem.detail)
        if let attempts = problem.attempts { writer.member("attempts", attempts) }
        if let platform = problem.platform { writer.member("platform", platform.rawValue) }
        writer.closeObject()
    }
}

extension EnrichmentResult.Attachment {
    /// The attachment object `json` writes, member by member, in its order (docs/output.md's).
    func write(into writer: inout JSONStreamWriter) {
        writer.openObject()
        writer.member("identifier", identifier)
        writer.member("path", media.path)
        writer.member("source", source)
        writer.member("field", field)
        writer.member("convention", convention)
        writer.member("platform", platform.rawValue)
        // The media's members, as `FetchedMedia.members(complete: false)` gives them.
        writer.member("type", media.type.uti)
        writer.member("mime", media.type.mime)
        writer.member("bytes", media.bytes)
        writer.member("sha256", media.sha256)
        if let transformation = media.transformation {
            writer.key("transformed")
            writer.openArray()
            for step in transformation.steps { writer.string(step.rawValue) }
            writer.closeArray()
            let original = transformation.original
            writer.key("original")
            writer.openObject()
            writer.member("type", original.type.uti)
            writer.member("mime", original.type.mime)
            writer.member("bytes", original.bytes)
            writer.member("sha256", original.sha256)
            writer.closeObject()
        }
        if case .published(let url)? = media.publication { writer.member("published_url", url) }
        if let typeHint { writer.member("type_hint", typeHint) }
        if let thumbnail { writer.member("thumbnail", thumbnail.json) }
        writer.member("attempts", attempts)
        if let fallbackFor { writer.member("fallback_for", fallbackFor) }
        writer.closeObject()
    }
}
