import RichPushCore

/// Notifee: `notifee_options`, an object or a JSON string, as NotifeeCoreExtensionHelper reads it:
/// `ios.attachments` (each {url, id, typeHint, thumbnailHidden, thumbnailClippingRect {x, y, width, height},
/// thumbnailTime}) takes precedence over `image` (a URL string). Notifee's own extension attaches only the first
/// attachment; we fetch every one (each bounded by the per-payload limit) and keep their order. Its `title`,
/// `subtitle` and `body` replace the notification's text, as Notifee's core does, whatever the downloads do.
public struct NotifeeConvention: MediaConvention {
    public var name: String { "notifee" }

    /// Where the app's custom data lives, searched for a route.
    public var customData: [[String]] { Self.customDataPaths }
    private static let customDataPaths: [[String]] = [["notifee_options", "@json", "data"]]

    /// `notifee_options`: nothing else is read.
    public var rootKeys: [String]? { ["notifee_options"] }

    /// The convention.
    public init() {}

    public func scan(_ payload: PushPayload) -> ConventionScan {
        var scan = ConventionScan()
        let options: JSONObject
        switch payload.root["notifee_options"] {
        case nil:
            return scan
        case .object(let object)?:
            options = object
        case .string(let text)?:
            guard case .object(let object)? = try? JSONParser().parse(Array(text.value.utf8)) else { return scan }
            options = object
        case let other?:
            scan.problems.append(
                EnrichmentProblem(
                    source: "notifee_options", code: .badReference,
                    detail: "notifee_options holds \(other.kindDescription); expected an object or a JSON string"))
            return scan
        }
        // Notifee's core sets the notification's text from these before it looks at attachments.
        let text = scan.alertText(options, field: "notifee_options")
        if text != AlertOverride() { scan.overrides.append(text) }
        if case .array(let attachments)? = options["ios"]?.objectValue?["attachments"], !attachments.isEmpty {
            for (index, item) in attachments.enumerated() {
                let field = "notifee_options.ios.attachments[\(index)]"
                guard case .object(let attachment) = item else {
                    scan.problems.append(
                        EnrichmentProblem(
                            source: field, code: .badReference,
                            detail: "\(field) holds \(item.kindDescription); expected {url, ...}"))
                    continue
                }
                let identifier =
                    attachment["id"]?.stringValue ?? (attachments.count == 1 ? "notifee" : "notifee-\(index + 1)")
                let thumbnail = Self.thumbnail(attachment, field: field, into: &scan)
                scan.take(
                    attachment["url"], field: field + ".url", convention: name, identifier: identifier,
                    typeHint: attachment["typeHint"]?.stringValue, thumbnail: thumbnail, required: true)
            }
            return scan
        }
        scan.take(options["image"], field: "notifee_options.image", convention: name, identifier: "notifee")
        return scan
    }

    /// UNNotificationAttachment's thumbnail options as Notifee names them; invalid values are `bad-option`.
    static func thumbnail(_ attachment: JSONObject, field: String, into scan: inout ConventionScan) -> Thumbnail {
        var thumbnail = Thumbnail()
        thumbnail.hidden = scan.flag(
            attachment["thumbnailHidden"], field: field + ".thumbnailHidden", named: "thumbnailHidden")
        thumbnail.clip = scan.clip(
            attachment["thumbnailClippingRect"], field: field + ".thumbnailClippingRect", named: "thumbnailClippingRect"
        )
        thumbnail.time = scan.seconds(
            attachment["thumbnailTime"], field: field + ".thumbnailTime", named: "thumbnailTime")
        return thumbnail
    }
}
