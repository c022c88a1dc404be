import RichPushCore

/// Home Assistant (its iOS companion app's notification service extension): a top-level `attachment` object
/// {url, content-type, hide-thumbnail, lazy}. `content-type` (jpeg, png, gif, mp3, aiff, waveformaudio,
/// mpeg4audio, mpeg, mpeg2, mpeg4, avi, or a UTI) becomes the `type_hint`; `hide-thumbnail` the thumbnail record.
///
/// What the app resolves on the device is reported and not fetched: a URL starting with `/` is relative to the
/// user's Home Assistant instance (`bad-url`); `lazy: true` leaves the download to the content extension, when
/// the notification is expanded (`on-device`); a camera push (`entity_id` `camera.*` and no URL) is a snapshot
/// the app takes from the instance's camera proxy (`on-device`).
public struct HomeAssistantConvention: MediaConvention {
    public var name: String { "home_assistant" }

    /// `attachment`, or `entity_id` alone (a camera push).
    public var rootKeys: [String]? { ["attachment", "entity_id"] }

    /// The convention.
    public init() {}

    public func scan(_ payload: PushPayload) -> ConventionScan {
        var scan = ConventionScan()
        let attachment = payload.root["attachment"]?.objectValue
        // A string `attachment` is Pushwoosh's, not a camera push.
        if attachment?["url"] == nil, payload.root["attachment"]?.stringValue == nil,
            let entity = payload.root["entity_id"]?.stringValue, entity.hasPrefix("camera.")
        {
            scan.problems.append(
                EnrichmentProblem(
                    source: "entity_id", code: .onDevice,
                    detail:
                        "\(entity): the companion app shows the camera's snapshot from the user's Home Assistant "
                        + "instance; "
                        + "nothing to fetch"
                ))
            return scan
        }
        guard let attachment else { return scan }
        let hint = scan.string(attachment["content-type"], field: "attachment.content-type", named: "content-type")
        let hidden = scan.flag(
            attachment["hide-thumbnail"], field: "attachment.hide-thumbnail", named: "hide-thumbnail")
        if scan.flag(attachment["lazy"], field: "attachment.lazy", named: "lazy") == true, attachment["url"] != nil {
            scan.problems.append(
                EnrichmentProblem(
                    source: "attachment.url", code: .onDevice,
                    detail:
                        "lazy: the companion app's content extension downloads it when the notification is expanded; "
                        + "the service extension fetches nothing"
                ))
            return scan
        }
        if let url = attachment["url"]?.stringValue, url.hasPrefix("/") {
            scan.problems.append(
                EnrichmentProblem(
                    source: "attachment.url", code: .badURL,
                    detail: "\(url) is relative to a Home Assistant instance; only its app can resolve it"))
            return scan
        }
        scan.take(
            attachment["url"], field: "attachment.url", convention: name, identifier: "attachment",
            typeHint: hint, thumbnail: Thumbnail(hidden: hidden), required: true)
        return scan
    }
}
