/// What the transformation step did to a fetched image: the attached file (`FetchedMedia`'s path, type, bytes and
/// hash) is the result; this records how it came to be and what was fetched.
public struct Transformation: Sendable, Hashable {
    /// One thing done. The raw values are stable and go into JSON output (`transformed`).
    public enum Step: String, Sendable, Hashable, CaseIterable {
        /// Written as another type (WebP to JPEG, SVG to PNG...).
        case transcoded
        /// Resized to fit the image cap or `transform.maximumDimension`.
        case downscaled
        /// Without EXIF, XMP, IPTC or text metadata: re-encoded (every re-encode is), or a PNG's chunks filtered.
        case metadataStripped = "metadata-stripped"
        /// Only the first frame of an animation was kept.
        case firstFrame = "first-frame"
    }

    /// What was fetched, before the transformation.
    public struct Original: Sendable, Hashable {
        /// The type its bytes are.
        public var type: MediaType
        /// Its size.
        public var bytes: Int
        /// Its SHA-256, lowercase hex.
        public var sha256: String

        public init(type: MediaType, bytes: Int, sha256: String) {
            self.type = type
            self.bytes = bytes
            self.sha256 = sha256
        }
    }

    /// What was done, in this order: transcoded, downscaled, metadata-stripped, first-frame.
    public var steps: [Step]
    /// What was fetched.
    public var original: Original

    public init(steps: [Step], original: Original) {
        self.steps = steps
        self.original = original
    }
}

extension Transformation.Step: Codable {}

extension Transformation.Original: Codable {
    /// `type`, `mime`, `bytes`, `sha256`: the output's `original`.
    package var json: PushPayload.JSON {
        .object(
            JSONObject([
                ("type", .text(type.uti)), ("mime", .text(type.mime)), ("bytes", .integer(bytes)),
                ("sha256", .text(sha256)),
            ]))
    }

    package init(json: PushPayload.JSON, path: String) throws {
        let fields = try JSONFields(json, path: path)
        self.init(
            type: try MediaType(fields: fields), bytes: try fields.required(fields.int("bytes"), "bytes"),
            sha256: try fields.required(fields.string("sha256"), "sha256"))
    }

    public init(from decoder: any Decoder) throws { self = try PushPayload.JSON.decode(decoder, Self.init(json:path:)) }
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}

extension Transformation: Codable {
    /// The members a transformation adds to its attachment's object: `transformed` and `original`.
    package var members: [(key: String, value: PushPayload.JSON)] {
        [("transformed", .array(steps.map { .text($0.rawValue) })), ("original", original.json)]
    }

    /// The transformation an object's `transformed` and `original` members say, nil when it has neither.
    package init?(fields: JSONFields) throws {
        guard let steps = try fields.elements("transformed", Self.step) else {
            guard fields.value("original") == nil else {
                throw JSONFields.error(fields.path, "original without transformed")
            }
            return nil
        }
        self.init(
            steps: steps,
            original: try fields.required(fields.object("original", Original.init(json:path:)), "original"))
    }

    private static func step(_ json: PushPayload.JSON, _ path: String) throws -> Step {
        guard let text = json.stringValue, let step = Step(rawValue: text) else {
            throw JSONFields.error(path, "not a transformation step: \(json.kindDescription)")
        }
        return step
    }

    /// Reads `{"transformed": [...], "original": {...}}`, what `encode(to:)` writes.
    public init(from decoder: any Decoder) throws {
        self = try PushPayload.JSON.decodeMembers(decoder, missing: "no transformed member", Self.init(fields:))
    }

    public func encode(to encoder: any Encoder) throws {
        try PushPayload.JSON.object(JSONObject(members)).encode(to: encoder)
    }
}
