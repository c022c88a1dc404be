/// Something that kept a reference from being attached, or that a user needs to hear about a payload.
///
/// `code` is stable (it goes into JSON output and metrics); `detail` carries the specifics.
public struct EnrichmentProblem: Sendable, Hashable, CustomStringConvertible {
    /// The URL or field the problem is about.
    public var source: String
    /// The stable code.
    public var code: Code
    /// The specifics, for a human.
    public var detail: String
    /// For a reference that was fetched, how many fetches were made (see `RetryPolicy`); nil for a problem of
    /// the payload itself (a field, an option).
    public var attempts: Int?
    /// The platform a reference's problem is for, when the input names references per platform (an FCM v1
    /// message); nil for an APNs payload (iOS alone) and for a problem of the payload itself.
    public var platform: DevicePlatform?

    /// A problem.
    public init(source: String, code: Code, detail: String, attempts: Int? = nil, platform: DevicePlatform? = nil) {
        self.source = source
        self.code = code
        self.detail = detail
        self.attempts = attempts
        self.platform = platform
    }

    public var description: String { "\(code) (\(source)): \(detail)" }
}

extension EnrichmentProblem: Codable {
    /// The problem as the output writes it: `source`, `code`, `detail`, then `attempts` and `platform` when known.
    package var json: PushPayload.JSON {
        var members: [(key: String, value: PushPayload.JSON)] = [
            ("source", .text(source)), ("code", .text(code.rawValue)), ("detail", .text(detail)),
        ]
        if let attempts { members.append(("attempts", .integer(attempts))) }
        if let platform { members.append(("platform", .text(platform.rawValue))) }
        return .object(JSONObject(members))
    }

    /// The problem in `json` (at `path`, for errors), as `json` writes it.
    package init(json: PushPayload.JSON, path: String) throws {
        let fields = try JSONFields(json, path: path)
        self.init(
            source: try fields.required(fields.string("source"), "source"),
            code: Code(rawValue: try fields.required(fields.string("code"), "code")),
            detail: try fields.required(fields.string("detail"), "detail"), attempts: try fields.int("attempts"),
            platform: try fields.string("platform").map(DevicePlatform.init(outputName:)))
    }

    public init(from decoder: any Decoder) throws { self = try PushPayload.JSON.decode(decoder, Self.init(json:path:)) }
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}
