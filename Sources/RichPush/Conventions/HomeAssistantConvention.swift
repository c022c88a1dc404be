/// Home Assistant (its iOS companion app's notification service extension): a top-level `attachment` object
/// {url, content-type, hide-thumbnail}. `content-type` (jpeg, png, gif, mp3, aiff, waveformaudio, mpeg4audio,
/// mpeg, mpeg2, mpeg4, avi, or a UTI) becomes the `type_hint`; `hide-thumbnail` the thumbnail record. A URL
/// starting with `/` is relative to the user's Home Assistant instance, which only the app knows: `bad-url`.
public struct HomeAssistantConvention: MediaConvention {
    public var name: String { "home_assistant" }

    /// The convention.
    public init() {}

    public func scan(_ payload: Payload) -> ConventionScan {
        var scan = ConventionScan()
        guard case .object(let attachment)? = payload.root["attachment"] else { return scan }
        let hint = scan.string(attachment["content-type"], field: "attachment.content-type", named: "content-type")
        let hidden = scan.flag(attachment["hide-thumbnail"], field: "attachment.hide-thumbnail", named: "hide-thumbnail")
        if let url = attachment["url"]?.stringValue, url.hasPrefix("/") {
            scan.problems.append(
                Problem(source: "attachment.url", code: .badURL, detail: "\(url) is relative to a Home Assistant instance; only its app can resolve it"))
            return scan
        }
        scan.take(
            attachment["url"] ?? .null, field: "attachment.url", convention: name, identifier: "attachment",
            typeHint: hint, thumbnail: Thumbnail(hidden: hidden))
        return scan
    }
}
