import RichPushCore

/// CleverTap: top-level `ct_mediaUrl` with `ct_mediaType` (`image`, `video`, `audio`, or an extension such as
/// `gif`), as CleverTap's CTNotificationServiceExtension reads them. Its extension names the file after the
/// declared type; we keep the declared type as the attachment's `type_hint` and let the bytes decide
/// (`type-mismatch` when they disagree). Unlike CleverTap's extension, a missing `ct_mediaType` does not
/// drop the media.
public struct CleverTapConvention: MediaConvention {
    public var name: String { "clevertap" }

    /// `wzrk_dl`: the deep link CleverTap's SDK opens.
    public var routeKeys: [RouteKey] { Self.routes }
    private static let routes: [RouteKey] = [RouteKey(.url, ["wzrk_dl"])]

    /// `ct_mediaUrl`, or `ct_mediaType` alone (checked, and reported when it is not a string).
    public var rootKeys: [String]? { ["ct_mediaUrl", "ct_mediaType"] }

    /// The convention.
    public init() {}

    public func scan(_ payload: PushPayload) -> ConventionScan {
        var scan = ConventionScan()
        let hint = scan.string(payload.root["ct_mediaType"], field: "ct_mediaType")
        scan.take(
            payload.root["ct_mediaUrl"], field: "ct_mediaUrl", convention: name, identifier: "ct_media", typeHint: hint)
        return scan
    }
}
