import RichPushCore

/// Airship: `com.urbanairship.media_attachment`, as Airship's iOS notification service extension reads it
/// (UANotificationServiceExtension and MediaAttachmentPayload in urbanairship/ios-library):
/// - `urls`: an array of `{url, url_id}` objects; when absent, `url`: a string or an array of strings;
/// - `options`: `crop` {x, y, width, height} (each 0...1), `time` (a number, negative ones too), `hidden` (a
///   boolean);
/// - `thumbnail_id`: the `url_id` of the attachment shown as the thumbnail: every other one (a lone `url` has the
///   id `""`) gets a hidden thumbnail, unless `options.hidden` says otherwise;
/// - `content`: {title, subtitle, body}, which replace the notification's text, only when every attachment was
///   made (Airship's Objective-C extension delivered the content as it came when a download failed; the Swift
///   rewrite applies the text regardless, which we knowingly do not).
///
/// Airship's older Accengage form is read too: `a4sid` at the top level with `acc-atts`, an array of
/// `{att-url, att-id}` (UAMediaAttachmentPayload), with the same `options`, `thumbnail_id` and `content` beside.
///
/// Options apply to every attachment of the payload, as Airship applies them. Where Airship's extension drops
/// the whole payload on one invalid value (a crop outside 0...1, a `url_id` or `thumbnail_id` that is not a
/// string, a `hidden` that is not a boolean), we keep the media and report the value as `bad-option`.
public struct AirshipConvention: MediaConvention {
    public var name: String { "airship" }

    /// `^d`: the argument of Airship's deep link action (`deep_link_action`'s short name).
    public var routeKeys: [RouteKey] { Self.routes }
    private static let routes: [RouteKey] = [RouteKey(.url, ["^d"]), RouteKey(.url, ["deep_link_action"])]

    static let key = "com.urbanairship.media_attachment"

    /// The keys of one form: where its attachment object is, and what its list and entries are called.
    private struct Form {
        var field: String
        var list: String
        var url: String
        var id: String
        static let airship = Form(field: AirshipConvention.key, list: "urls", url: "url", id: "url_id")
        static let accengage = Form(field: "", list: "acc-atts", url: "att-url", id: "att-id")

        func path(_ key: String) -> String { field.isEmpty ? key : "\(field).\(key)" }
    }

    /// The attachment object, or the Accengage form's `a4sid` (which needs `acc-atts` beside it).
    public var rootKeys: [String]? { [Self.key, "a4sid"] }

    /// The convention.
    public init() {}

    public func scan(_ payload: PushPayload) -> ConventionScan {
        var scan = ConventionScan()
        let form: Form
        let attachment: JSONObject
        if let value = payload.root[Self.key] {
            guard case .object(let object) = value else {
                scan.problems.append(
                    EnrichmentProblem(
                        source: Self.key, code: .badReference,
                        detail: "\(Self.key) holds \(value.kindDescription); Airship sends an object"))
                return scan
            }
            (form, attachment) = (.airship, object)
        } else if payload.root["a4sid"] != nil, payload.root["acc-atts"] != nil {
            (form, attachment) = (.accengage, payload.root)
        } else {
            return scan
        }
        let thumbnailID = scan.string(
            attachment["thumbnail_id"], field: form.path("thumbnail_id"), named: "thumbnail_id")
        let options = thumbnailOptions(attachment["options"], form: form, into: &scan)
        var entries: [(url: PushPayload.JSON?, id: String?, field: String)] = []
        if let urls = attachment[form.list] {
            if case .array(let items) = urls {
                for (index, item) in items.enumerated() {
                    let field = form.path("\(form.list)[\(index)]")
                    guard case .object(let object) = item else {
                        scan.problems.append(
                            EnrichmentProblem(
                                source: field, code: .badReference,
                                detail: "\(field) holds \(item.kindDescription); expected {\(form.url), \(form.id)}"))
                        continue
                    }
                    let id = scan.string(object[form.id], field: "\(field).\(form.id)", named: form.id)
                    entries.append((object[form.url], id, "\(field).\(form.url)"))
                }
            } else {
                scan.problems.append(
                    EnrichmentProblem(
                        source: form.path(form.list), code: .badReference,
                        detail: "\(form.path(form.list)) holds \(urls.kindDescription); expected an array"))
            }
        } else if form.field == Self.key, case .array(let items)? = attachment["url"] {
            for (index, item) in items.enumerated() { entries.append((item, nil, "\(Self.key).url[\(index)]")) }
        } else if form.field == Self.key, let url = attachment["url"] {
            entries.append((url, nil, "\(Self.key).url"))
        }
        for (index, entry) in entries.enumerated() {
            let identifier = entry.id ?? (entries.count == 1 ? "airship" : "airship-\(index + 1)")
            var thumbnail = options
            if let thumbnailID {
                // As the SDK: the attachment whose id is thumbnail_id shows its thumbnail; the others hide theirs
                // unless options.hidden says otherwise. An entry without an id has the id "".
                thumbnail.primary = thumbnailID == (entry.id ?? "")
                thumbnail.hidden = options.hidden ?? !thumbnail.primary!
            }
            scan.take(
                entry.url, field: entry.field, convention: name, identifier: identifier, thumbnail: thumbnail,
                required: true)
        }
        let unreadable = scan.problems.contains { $0.code == .badReference }
        if case .object(let content)? = attachment["content"] {
            var override = scan.alertText(content, field: form.path("content"))
            // The SDK applies the text only once every download succeeded; a payload it cannot read at all (an
            // entry that is not a URL string) it leaves as it came.
            override.requiredURLs = scan.references.map(\.url)
            if !unreadable { scan.overrides.append(override) }
        }
        return scan
    }

    /// The thumbnail options, each checked as Airship checks it; an invalid one is reported and left out.
    private func thumbnailOptions(_ value: PushPayload.JSON?, form: Form, into scan: inout ConventionScan) -> Thumbnail
    {
        var thumbnail = Thumbnail()
        guard let value else { return thumbnail }
        let field = form.path("options")
        guard case .object(let options) = value else {
            scan.problems.append(
                EnrichmentProblem(
                    source: field, code: .badOption,
                    detail: "options holds \(value.kindDescription); expected an object"))
            return thumbnail
        }
        thumbnail.clip = scan.clip(options["crop"], field: field + ".crop", named: "crop")
        thumbnail.time = scan.seconds(options["time"], field: field + ".time", named: "time", allowingNegative: true)
        thumbnail.hidden = scan.flag(options["hidden"], field: field + ".hidden", named: "hidden")
        return thumbnail
    }
}
