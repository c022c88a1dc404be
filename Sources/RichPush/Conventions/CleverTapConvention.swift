/// CleverTap: top-level `ct_mediaUrl` with `ct_mediaType` (`image`, `video`, `audio`, or an extension such as
/// `gif`), as CleverTap's CTNotificationServiceExtension reads them. Its extension names the file after the
/// declared type; we keep the declared type as the attachment's `type_hint` and let the bytes decide
/// (`type-mismatch` when they disagree). Unlike CleverTap's extension, a missing `ct_mediaType` does not
/// drop the media.
public struct CleverTapConvention: MediaConvention {
    public var name: String { "clevertap" }

    /// The convention.
    public init() {}

    public func scan(_ payload: Payload) -> ConventionScan {
        var scan = ConventionScan()
        var hint: String?
        if let declared = payload.root["ct_mediaType"] {
            if let text = declared.stringValue {
                hint = text
            } else {
                scan.problems.append(
                    Problem(source: "ct_mediaType", code: .badOption, detail: "ct_mediaType holds \(declared.kindDescription); expected a string"))
            }
        }
        scan.take(payload.root["ct_mediaUrl"], field: "ct_mediaUrl", convention: name, identifier: "ct_media", typeHint: hint)
        return scan
    }
}
