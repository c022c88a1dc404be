/// Airship: `com.urbanairship.media_attachment`, as Airship's iOS notification service extension reads it
/// (UAMediaAttachmentPayload in urbanairship/ios-library):
/// - `urls`: an array of `{url, url_id}` objects; when absent, `url`: a string or an array of strings;
/// - `options`: `crop` {x, y, width, height} (each 0...1), `time` (a number), `hidden` (a boolean);
/// - `thumbnail_id`: the `url_id` of the attachment shown as the thumbnail;
/// - `content`: {title, subtitle, body}, which replace the notification's text.
///
/// Options apply to every attachment of the payload, as Airship applies them. Where Airship's extension drops
/// the whole payload on one invalid value, we keep the media and report the value as `bad-option`.
public struct AirshipConvention: MediaConvention {
    public var name: String { "airship" }

    /// `^d`: the argument of Airship's deep link action (`deep_link_action`'s short name).
    public var routeKeys: [RouteKey] { [RouteKey(.url, ["^d"]), RouteKey(.url, ["deep_link_action"])] }

    static let key = "com.urbanairship.media_attachment"

    /// The convention.
    public init() {}

    public func scan(_ payload: Payload) -> ConventionScan {
        var scan = ConventionScan()
        guard let value = payload.root[Self.key] else { return scan }
        guard case .object(let attachment) = value else {
            scan.problems.append(
                Problem(source: Self.key, code: .badReference, detail: "\(Self.key) holds \(value.kindDescription); Airship sends an object"))
            return scan
        }
        let thumbnailID = attachment["thumbnail_id"]?.stringValue
        var options = thumbnailOptions(attachment["options"], into: &scan)
        var entries: [(url: JSONValue, id: String?, field: String)] = []
        if let urls = attachment["urls"] {
            if case .array(let items) = urls {
                for (index, item) in items.enumerated() {
                    let field = "\(Self.key).urls[\(index)]"
                    guard case .object(let object) = item else {
                        scan.problems.append(Problem(source: field, code: .badReference, detail: "\(field) holds \(item.kindDescription); expected {url, url_id}"))
                        continue
                    }
                    entries.append((object["url"] ?? .null, object["url_id"]?.stringValue, field + ".url"))
                }
            } else {
                scan.problems.append(Problem(source: "\(Self.key).urls", code: .badReference, detail: "\(Self.key).urls holds \(urls.kindDescription); expected an array"))
            }
        } else if case .array(let items)? = attachment["url"] {
            for (index, item) in items.enumerated() { entries.append((item, nil, "\(Self.key).url[\(index)]")) }
        } else if let url = attachment["url"] {
            entries.append((url, nil, "\(Self.key).url"))
        }
        for (index, entry) in entries.enumerated() {
            let identifier = entry.id ?? (entries.count == 1 ? "airship" : "airship-\(index + 1)")
            options.primary = thumbnailID.map { $0 == entry.id }
            scan.take(entry.url, field: entry.field, convention: name, identifier: identifier, thumbnail: options)
        }
        if case .object(let content)? = attachment["content"] {
            var override = AlertOverride()
            for (key, path) in [("title", \AlertOverride.title), ("subtitle", \.subtitle), ("body", \.body)] {
                override[keyPath: path] = scan.string(
                    content[key], field: "\(Self.key).content.\(key)", named: "content.\(key)")
            }
            scan.overrides.append(override)
        }
        return scan
    }

    /// The thumbnail options, each checked as Airship checks it; an invalid one is reported and left out.
    private func thumbnailOptions(_ value: JSONValue?, into scan: inout ConventionScan) -> Thumbnail {
        var thumbnail = Thumbnail()
        guard let value else { return thumbnail }
        let field = "\(Self.key).options"
        guard case .object(let options) = value else {
            scan.problems.append(Problem(source: field, code: .badOption, detail: "options holds \(value.kindDescription); expected an object"))
            return thumbnail
        }
        thumbnail.clip = scan.clip(options["crop"], field: field + ".crop", named: "crop")
        thumbnail.time = scan.seconds(options["time"], field: field + ".time", named: "time")
        thumbnail.hidden = scan.flag(options["hidden"], field: field + ".hidden", named: "hidden", acceptingBits: true)
        return thumbnail
    }
}
