/// A width and a height, in pixels.
public struct ImageSize: Sendable, Hashable {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
}

extension ImageSize: Codable {
    /// `width` and `height`.
    package var json: PushPayload.JSON {
        .object(JSONObject([("width", .integer(width)), ("height", .integer(height))]))
    }

    package init(json: PushPayload.JSON, path: String) throws {
        let fields = try JSONFields(json, path: path)
        self.init(
            width: try fields.required(fields.int("width"), "width"),
            height: try fields.required(fields.int("height"), "height"))
    }

    public init(from decoder: any Decoder) throws { self = try PushPayload.JSON.decode(decoder, Self.init(json:path:)) }
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}
