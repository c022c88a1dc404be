extension EnrichmentResult {
    /// One attachment made for a payload.
    public struct Attachment: Sendable, Hashable, Codable {
        /// Unique within the payload (from the convention's field), as UNNotificationAttachment's identifier.
        public var identifier: String
        /// The URL it was fetched from, as the payload gave it.
        public var source: String
        /// The key path of the field that named it (`adb_media`, `message.android.notification.image`).
        public var field: String
        /// The convention that found the URL.
        public var convention: String
        /// The phone it is for: `ios` (every attachment of an APNs payload), or `android` (an FCM message's Android
        /// variant).
        public var platform: DevicePlatform
        /// The stored file.
        public var media: FetchedMedia
        /// The thumbnail options the vendor gave, if any.
        public var thumbnail: Thumbnail? = nil
        /// The type the payload declared, as written, if any.
        public var typeHint: String? = nil
        /// How many fetches it took (1 without a retry; see `RetryPolicy`).
        public var attempts: Int = 1
        /// The URL this attachment stands in for, when it was fetched from the vendor's fallback because that one
        /// failed (Swrve's `fallback_url`; `source` and `field` are then the fallback's); nil when the payload's
        /// first URL attached. Written as `fallback_for`.
        public var fallbackFor: String? = nil

        /// An attachment (for test doubles and callers that build results themselves).
        public init(
            identifier: String, source: String, field: String, convention: String, platform: DevicePlatform = .ios,
            media: FetchedMedia, thumbnail: Thumbnail? = nil, typeHint: String? = nil, attempts: Int = 1,
            fallbackFor: String? = nil
        ) {
            self.identifier = identifier
            self.source = source
            self.field = field
            self.convention = convention
            self.platform = platform
            self.media = media
            self.thumbnail = thumbnail
            self.typeHint = typeHint
            self.attempts = attempts
            self.fallbackFor = fallbackFor
        }

        /// The attachment object of the output: its own members around its media's, in docs/output.md's order.
        package var json: PushPayload.JSON {
            let (path, rest) = media.members(complete: false)
            var members: [(key: String, value: PushPayload.JSON)] = [("identifier", .text(identifier))] + path
            members += [
                ("source", .text(source)), ("field", .text(field)), ("convention", .text(convention)),
                ("platform", .text(platform.rawValue)),
            ]
            members += rest
            if let typeHint { members.append(("type_hint", .text(typeHint))) }
            if let thumbnail { members.append(("thumbnail", thumbnail.json)) }
            members.append(("attempts", .integer(attempts)))
            if let fallbackFor { members.append(("fallback_for", .text(fallbackFor))) }
            return .object(JSONObject(members))
        }

        /// The attachment in an attachment object of the output (`json`). What the output leaves out of the media
        /// is not known: no validators, dimensions or damage; its directory is its path's.
        package init(json: PushPayload.JSON, path: String) throws {
            let fields = try JSONFields(json, path: path)
            self.init(
                identifier: try fields.required(fields.string("identifier"), "identifier"),
                source: try fields.required(fields.string("source"), "source"),
                field: try fields.required(fields.string("field"), "field"),
                convention: try fields.required(fields.string("convention"), "convention"),
                platform: try DevicePlatform(outputName: fields.required(fields.string("platform"), "platform")),
                media: try FetchedMedia(fields: fields),
                thumbnail: try fields.object("thumbnail", Thumbnail.init(json:path:)),
                typeHint: try fields.string("type_hint"),
                attempts: try fields.required(fields.int("attempts"), "attempts"),
                fallbackFor: try fields.string("fallback_for"))
        }

        public init(from decoder: any Decoder) throws {
            self = try PushPayload.JSON.decode(decoder, Self.init(json:path:))
        }
        public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
    }
}
