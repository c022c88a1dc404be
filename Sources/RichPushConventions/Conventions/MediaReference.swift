import RichPushCore

/// One media URL found in a payload.
public struct MediaReference: Sendable, Hashable {
    /// The URL text as the payload gives it.
    public var url: String
    /// The name of the convention that found it.
    public var convention: String
    /// The attachment identifier to use (unique within the payload, derived from the field).
    public var identifier: String
    /// The key path of the field it came from, for problems (`adb_media`, `payload.image_attachment`).
    public var field: String
    /// How the vendor wants the attachment's thumbnail shown, when it says.
    public var thumbnail: Thumbnail?
    /// The type the payload declares for the media (CleverTap `ct_mediaType`), as written. The bytes decide;
    /// a disagreement is reported as `type-mismatch`.
    public var typeHint: String?
    /// The phone it is for: iOS for every reference of an APNs payload; in an FCM v1 message, the platform whose
    /// field (or whose reading of `notification.image`) named it.
    public var platform: DevicePlatform
    /// The URL fetched instead when this one fails, for any reason, within the same deadline (Swrve's
    /// `fallback_url`); nil when the vendor gives none.
    public var fallback: Fallback?

    /// A reference's fallback: its URL, and the deep link that becomes the route when it is the one attached.
    public struct Fallback: Sendable, Hashable {
        /// The URL text as the payload gives it.
        public var url: String
        /// The key path of the field it came from (`_sw.media.fallback_url`).
        public var field: String
        /// The deep link that becomes the route when the fallback is the one attached (Swrve's `fallback_sd`).
        public var route: String?
        /// The key path `route` came from.
        public var routeField: String?

        /// A fallback.
        public init(url: String, field: String, route: String? = nil, routeField: String? = nil) {
            self.url = url
            self.field = field
            self.route = route
            self.routeField = routeField
        }
    }

    /// A reference.
    public init(
        url: String, convention: String, identifier: String, field: String, thumbnail: Thumbnail? = nil,
        typeHint: String? = nil, platform: DevicePlatform = .ios
    ) {
        self.platform = platform
        self.url = url
        self.convention = convention
        self.identifier = identifier
        self.field = field
        self.thumbnail = thumbnail
        self.typeHint = typeHint
    }
}
