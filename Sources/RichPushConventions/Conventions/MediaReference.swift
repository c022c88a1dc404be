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
