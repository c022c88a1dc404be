import RichPushCore

/// A vendor-neutral thumbnail record: what UNNotificationAttachment's thumbnail options say, whichever vendor's
/// payload said it. Written on the attachment as `thumbnail`.
public struct Thumbnail: Sendable, Hashable {
    /// The part of the image shown as the thumbnail, each value in 0...1 of the image's size.
    public struct Clip: Sendable, Hashable {
        public var x: Double
        public var y: Double
        public var width: Double
        public var height: Double

        /// A clipping rectangle, each value a fraction of the media's size (0...1).
        public init(x: Double, y: Double, width: Double, height: Double) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }
    }

    /// Whether this attachment is the one shown as the notification's thumbnail (Airship `thumbnail_id`).
    public var primary: Bool?
    /// Whether the thumbnail is hidden.
    public var hidden: Bool?
    /// The clipping rectangle.
    public var clip: Clip?
    /// For a video, the time in seconds of the frame shown.
    public var time: Double?

    /// A record with nothing said.
    public init(primary: Bool? = nil, hidden: Bool? = nil, clip: Clip? = nil, time: Double? = nil) {
        self.primary = primary
        self.hidden = hidden
        self.clip = clip
        self.time = time
    }

    /// This record, with what it leaves unsaid taken from `other`.
    func filled(from other: Thumbnail) -> Thumbnail {
        Thumbnail(
            primary: primary ?? other.primary, hidden: hidden ?? other.hidden, clip: clip ?? other.clip,
            time: time ?? other.time)
    }

    package var json: PushPayload.JSON {
        var members: [(key: String, value: PushPayload.JSON)] = []
        if let primary { members.append(("primary", .bool(primary))) }
        if let hidden { members.append(("hidden", .bool(hidden))) }
        if let clip { members.append(("clip", clip.json)) }
        if let time { members.append(("time", .number(Self.text(time)))) }
        return .object(JSONObject(members))
    }

    /// A JSON number for a finite double: integers without a fraction.
    static func text(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

extension Thumbnail: Codable {
    /// Reads the output's `thumbnail` object (`json`).
    package init(json: PushPayload.JSON, path: String) throws {
        let fields = try JSONFields(json, path: path)
        self.init(
            primary: try fields.bool("primary"), hidden: try fields.bool("hidden"),
            clip: try fields.object("clip", Clip.init(json:path:)), time: try fields.double("time"))
    }

    public init(from decoder: any Decoder) throws { self = try PushPayload.JSON.decode(decoder, Self.init(json:path:)) }
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}

extension Thumbnail.Clip: Codable {
    /// `x`, `y`, `width`, `height`.
    package var json: PushPayload.JSON {
        .object(
            JSONObject([
                ("x", .number(Thumbnail.text(x))), ("y", .number(Thumbnail.text(y))),
                ("width", .number(Thumbnail.text(width))), ("height", .number(Thumbnail.text(height))),
            ]))
    }

    package init(json: PushPayload.JSON, path: String) throws {
        let fields = try JSONFields(json, path: path)
        self.init(
            x: try fields.required(fields.double("x"), "x"), y: try fields.required(fields.double("y"), "y"),
            width: try fields.required(fields.double("width"), "width"),
            height: try fields.required(fields.double("height"), "height"))
    }

    public init(from decoder: any Decoder) throws { self = try PushPayload.JSON.decode(decoder, Self.init(json:path:)) }
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}
