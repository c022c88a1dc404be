/// A push payload: an APNs-style JSON object, held losslessly.
public struct PushPayload: Sendable, Hashable {
    /// The payload's top-level object.
    public var root: JSONObject

    /// A payload from its top-level object.
    public init(_ root: JSONObject) {
        self.root = root
    }

    /// Parses a payload from JSON text. A UTF-8 byte-order mark before it (a file saved by some Windows editors) is
    /// passed over, as RFC 8259 lets a parser do; it was `not-json` at byte 0.
    /// - Throws: `PayloadError`: `payload-too-large`, `invalid-utf8`, `not-json`, `too-deep`, or `not-object` when the
    ///   text is JSON but not an object.
    public init(parsing bytes: some Collection<UInt8>, limits: JSONParser.Limits = .init()) throws(PayloadError) {
        let value = try JSONParser(limits: limits).parseFile(bytes)
        guard case .object(let object) = value else {
            throw PayloadError(.notObject, "a payload is a JSON object; this is \(value.kindDescription)")
        }
        self.root = object
    }

    /// Whether `aps.mutable-content` is 1, the condition for a notification service extension to run.
    public var isMutable: Bool {
        guard case .object(let aps)? = root["aps"], case .number(let text)? = aps["mutable-content"] else {
            return false
        }
        // `1` as senders write it, without strtod (0.4% of the campaign's CPU); `1.0` and `1e0` are 1 too.
        return text == "1" || Double(text) == 1
    }

    /// The payload as compact JSON text.
    public var json: PushPayload.JSON { .object(root) }
}
