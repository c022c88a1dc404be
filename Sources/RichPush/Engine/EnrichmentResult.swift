#if canImport(Glibc)
    import Glibc
#endif

/// One attachment made for a payload.
public struct Attachment: Sendable, Hashable {
    /// Unique within the payload (from the convention's field), as UNNotificationAttachment's identifier.
    public var identifier: String
    /// The URL it was fetched from, as the payload gave it.
    public var source: String
    /// The convention that found the URL.
    public var convention: String
    /// The stored file.
    public var media: FetchedMedia
    /// The thumbnail options the vendor gave, if any.
    public var thumbnail: Thumbnail? = nil
    /// The type the payload declared, as written, if any.
    public var typeHint: String? = nil
}

/// How a payload's processing ended. The raw values are stable and go into JSON output.
public enum Outcome: String, Sendable, Hashable, CaseIterable {
    /// Every reference attached.
    case complete
    /// Some references attached, some failed.
    case partial
    /// The deadline came before every reference finished; what did finish is attached.
    case expired
    /// The payload has no media reference; it is returned as it came.
    case unchanged
    /// References were found, none attached.
    case failed
    /// The input is not a payload.
    case invalid
    /// The work was cancelled before it finished: by the caller (its task was cancelled) or by the engine
    /// shutting down (a payload arriving after shutdown began is not processed at all). What finished is attached.
    case cancelled
}

/// What RichPush made of one payload: the mutated content, the attachments, the problems.
public struct EnrichmentResult: Sendable {
    /// How it ended.
    public var outcome: Outcome
    /// The payload with its mutations, or nil when the input was not a payload.
    public var content: Payload?
    /// The attachments, in reference order.
    public var attachments: [Attachment]
    /// Where the app should go when the notification is opened, when the payload says.
    public var route: Route? = nil
    /// Everything a user should hear, in the order found.
    public var problems: [Problem]
    /// Time from the start of processing to the result.
    public var elapsed: Duration

    /// The result as the JSON object RichPush writes, one per payload (see the README for the format).
    /// - Parameter input: the input's name (a path, `-`, or a line number for `stream`).
    public func json(input: String) -> JSONValue {
        let attachmentValues: [JSONValue] = attachments.map { attachment in
            var members: [(key: String, value: JSONValue)] = [
                ("identifier", .text(attachment.identifier)),
                ("path", .text(attachment.media.path)),
                ("source", .text(attachment.source)),
                ("convention", .text(attachment.convention)),
                ("type", .text(attachment.media.type.uti)),
                ("mime", .text(attachment.media.type.mime)),
                ("bytes", .integer(attachment.media.bytes)),
                ("sha256", .text(attachment.media.sha256)),
            ]
            if let hint = attachment.typeHint { members.append(("type_hint", .text(hint))) }
            if let thumbnail = attachment.thumbnail { members.append(("thumbnail", thumbnail.json)) }
            return .object(JSONObject(members))
        }
        let problemValues: [JSONValue] = problems.map { problem in
            .object(
                JSONObject([
                    ("source", .text(problem.source)), ("code", .text(problem.code.rawValue)),
                    ("detail", .text(problem.detail)),
                ]))
        }
        // Tenths of a millisecond, written without Foundation's String(format:).
        let tenths = elapsed.components.seconds * 10_000 + elapsed.components.attoseconds / 100_000_000_000_000
        return .object(
            JSONObject([
                ("input", .text(input)),
                ("outcome", .text(outcome.rawValue)),
                ("content", content?.json ?? .null),
                ("attachments", .array(attachmentValues)),
            ] + (route.map { [("route", $0.json)] } ?? []) + [
                ("problems", .array(problemValues)),
                ("elapsed_ms", .number("\(tenths / 10).\(tenths % 10)")),
            ]))
    }

    /// The result for an input that is not a payload.
    public static func invalid(_ error: PayloadError, source: String, elapsed: Duration = .zero) -> EnrichmentResult {
        EnrichmentResult(
            outcome: .invalid, content: nil, attachments: [],
            problems: [Problem(source: source, code: Problem.Code(error.code.rawValue), detail: error.detail)],
            elapsed: elapsed)
    }
}
