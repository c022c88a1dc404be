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
        var hint: String?
        if let declared = attachment["content-type"] {
            if let text = declared.stringValue { hint = text } else {
                scan.problems.append(Problem(source: "attachment.content-type", code: .badOption, detail: "content-type holds \(declared.kindDescription); expected a string"))
            }
        }
        var thumbnail = Thumbnail()
        if let hidden = attachment["hide-thumbnail"] {
            if case .bool(let flag) = hidden { thumbnail.hidden = flag } else {
                scan.problems.append(Problem(source: "attachment.hide-thumbnail", code: .badOption, detail: "hide-thumbnail must be a boolean"))
            }
        }
        if let url = attachment["url"]?.stringValue, url.hasPrefix("/") {
            scan.problems.append(
                Problem(source: "attachment.url", code: .badURL, detail: "\(url) is relative to a Home Assistant instance; only its app can resolve it"))
            return scan
        }
        let before = scan.references.count
        scan.take(attachment["url"] ?? .null, field: "attachment.url", convention: name, identifier: "attachment", typeHint: hint)
        if scan.references.count > before, thumbnail != Thumbnail() { scan.references[before].thumbnail = thumbnail }
        return scan
    }
}
