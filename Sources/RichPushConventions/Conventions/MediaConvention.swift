import RichPushCore

/// A vendor's way of carrying media in a push payload: where the URL lives and what goes with it.
///
/// Conventions are values registered in a `ConventionRegistry`; library users add their own by conforming to
/// this protocol.
public protocol MediaConvention: Sendable {
    /// The convention's stable name, written as `convention` on attachments (`adb_media`, `zego`).
    var name: String { get }

    /// The media references this convention finds in `payload`, and the problems of fields it reads that hold
    /// the wrong type. Finding nothing is not a problem.
    func scan(_ payload: Payload) -> ConventionScan

    /// Key paths (with `@json` steps, as `KeyPathConvention`) to the objects where the vendor keeps the app's
    /// custom data, searched for a route before the payload's root. Default: none.
    var customData: [[String]] { get }

    /// Where the vendor's own SDK reads the deep link (or content id) it opens the notification with (Airship
    /// `^d`, OneSignal `custom.u`), searched for a route before any generic key. Default: none.
    var routeKeys: [RouteKey] { get }
}

extension MediaConvention {
    public var customData: [[String]] { [] }
    public var routeKeys: [RouteKey] { [] }
}

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

    /// A reference.
    public init(
        url: String, convention: String, identifier: String, field: String, thumbnail: Thumbnail? = nil,
        typeHint: String? = nil
    ) {
        self.url = url
        self.convention = convention
        self.identifier = identifier
        self.field = field
        self.thumbnail = thumbnail
        self.typeHint = typeHint
    }
}

/// A vendor-neutral thumbnail record: what UNNotificationAttachment's thumbnail options say, whichever vendor's
/// payload said it. Written on the attachment as `thumbnail`.
public struct Thumbnail: Sendable, Hashable {
    /// The part of the image shown as the thumbnail, each value in 0...1 of the image's size.
    public struct Clip: Sendable, Hashable {
        public var x: Double
        public var y: Double
        public var width: Double
        public var height: Double

        /// A clipping rectangle, each value a fraction of the media's size (0...1).
        public init(x: Double, y: Double, width: Double, height: Double) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }
    }

    /// Whether this attachment is the one shown as the notification's thumbnail (Airship `thumbnail_id`).
    public var primary: Bool?
    /// Whether the thumbnail is hidden.
    public var hidden: Bool?
    /// The clipping rectangle.
    public var clip: Clip?
    /// For a video, the time in seconds of the frame shown.
    public var time: Double?

    /// A record with nothing said.
    public init(primary: Bool? = nil, hidden: Bool? = nil, clip: Clip? = nil, time: Double? = nil) {
        self.primary = primary
        self.hidden = hidden
        self.clip = clip
        self.time = time
    }

    /// This record, with what it leaves unsaid taken from `other`.
    func filled(from other: Thumbnail) -> Thumbnail {
        Thumbnail(
            primary: primary ?? other.primary, hidden: hidden ?? other.hidden, clip: clip ?? other.clip,
            time: time ?? other.time)
    }

    package var json: JSONValue {
        var members: [(key: String, value: JSONValue)] = []
        if let primary { members.append(("primary", .bool(primary))) }
        if let hidden { members.append(("hidden", .bool(hidden))) }
        if let clip {
            members.append(
                ("clip", .object(JSONObject([
                    ("x", .number(Self.text(clip.x))), ("y", .number(Self.text(clip.y))),
                    ("width", .number(Self.text(clip.width))), ("height", .number(Self.text(clip.height))),
                ]))))
        }
        if let time { members.append(("time", .number(Self.text(time)))) }
        return .object(JSONObject(members))
    }

    /// A JSON number for a finite double: integers without a fraction.
    static func text(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

/// A change a convention asks for in the returned content, besides the attachments (Airship's `content`).
public struct AlertOverride: Sendable, Hashable {
    /// Replaces `aps.alert.title` when set.
    public var title: String?
    /// Replaces `aps.alert.subtitle` when set.
    public var subtitle: String?
    /// Replaces `aps.alert.body` when set.
    public var body: String?
    /// The URLs that must all be attached for the override to apply (Airship's text goes with its media: its
    /// SDK drops the text when a download fails). Empty: it always applies.
    public var requiredURLs: [String] = []

    /// An override.
    public init(title: String? = nil, subtitle: String? = nil, body: String? = nil) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
    }

    /// Whether the override applies once the URLs `attached` are attached: every required URL is among them.
    package func applies(attached: [String]) -> Bool {
        requiredURLs.allSatisfy { attached.contains($0) }
    }

    /// Applies the override to a payload's `aps.alert`, making it an object when it was a string (the string
    /// becomes its body) and keeping every other key where it was.
    package func apply(to payload: inout Payload) {
        guard title != nil || subtitle != nil || body != nil else { return }
        var aps = payload.root["aps"]?.objectValue ?? JSONObject()
        var alert: JSONObject
        switch aps["alert"] {
        case .object(let object)?: alert = object
        case .string(let text)?: alert = JSONObject([("body", .string(text))])
        default: alert = JSONObject()
        }
        if let title { alert.set("title", .text(title)) }
        if let subtitle { alert.set("subtitle", .text(subtitle)) }
        if let body { alert.set("body", .text(body)) }
        aps.set("alert", .object(alert))
        payload.root.set("aps", .object(aps))
    }
}

/// What a convention found in one payload.
public struct ConventionScan: Sendable, Hashable {
    /// The references, in the order the convention documents.
    public var references: [MediaReference] = []
    /// Fields the convention reads that hold something it cannot use (a number where a URL belongs).
    public var problems: [Problem] = []
    /// Changes to the notification's text the payload asks for (Airship's `content`), in order.
    public var overrides: [AlertOverride] = []

    /// An empty scan.
    public init(references: [MediaReference] = [], problems: [Problem] = [], overrides: [AlertOverride] = []) {
        self.references = references
        self.problems = problems
        self.overrides = overrides
    }

    /// Records the string at `field` as a reference, or a `bad-reference` problem when `value` is not a string;
    /// nothing when `value` is nil (the key is absent). What a convention calls for each media URL it finds.
    public mutating func take(
        _ value: JSONValue?, field: String, convention: String, identifier: String, typeHint: String? = nil,
        thumbnail: Thumbnail = Thumbnail()
    ) {
        guard let value else { return }
        guard let url = value.stringValue else {
            problems.append(
                Problem(
                    source: field, code: .badReference,
                    detail: "\(field) holds \(value.kindDescription); a media URL is a string"))
            return
        }
        references.append(
            MediaReference(
                url: url, convention: convention, identifier: identifier, field: field,
                thumbnail: thumbnail == Thumbnail() ? nil : thumbnail, typeHint: typeHint))
    }

    // MARK: - Vendor options, each checked; an invalid one is a `bad-option` problem and reads as nil

    private mutating func refuse(_ field: String, _ detail: String) {
        problems.append(Problem(source: field, code: .badOption, detail: detail))
    }

    /// The value at `path` from the payload's root, through objects; the step `KeyPathConvention.jsonStep`
    /// (`@json`) parses a JSON-encoded string first. Nil when a key is absent; a step that must be an object and
    /// is not one is recorded as a `bad-reference` problem.
    public mutating func value(at path: [String], in payload: Payload) -> JSONValue? {
        walk(payload, path, into: &self)
    }

    /// The string at `field` (`name` in the message; default the field); a `bad-option` problem when it is not one.
    public mutating func string(_ value: JSONValue?, field: String, named name: String? = nil) -> String? {
        guard let value else { return nil }
        guard let text = value.stringValue else {
            refuse(field, "\(name ?? field) holds \(value.kindDescription); expected a string")
            return nil
        }
        return text
    }

    /// The alert text `object` gives in `title`, `subtitle` and `body` (each a string, else `bad-option`), as an
    /// override; fields are named under `field`.
    mutating func alertText(_ object: JSONObject, field: String) -> AlertOverride {
        var override = AlertOverride()
        for (key, path) in [("title", \AlertOverride.title), ("subtitle", \.subtitle), ("body", \.body)] {
            override[keyPath: path] = string(object[key], field: "\(field).\(key)")
        }
        return override
    }

    /// A boolean at `field`.
    public mutating func flag(_ value: JSONValue?, field: String, named name: String) -> Bool? {
        switch value {
        case nil: return nil
        case .bool(let flag)?: return flag
        default:
            refuse(field, "\(name) must be a boolean")
            return nil
        }
    }

    /// A number of seconds at `field`: 0 or more, or any finite number `allowingNegative` (Airship's `time`).
    public mutating func seconds(
        _ value: JSONValue?, field: String, named name: String, allowingNegative: Bool = false
    ) -> Double? {
        guard let value else { return nil }
        guard case .number(let text) = value, let seconds = Double(text), seconds >= 0 || allowingNegative,
            seconds.isFinite
        else {
            refuse(field, "\(name) must be a number of seconds\(allowingNegative ? "" : ", 0 or more")")
            return nil
        }
        return seconds
    }

    /// A clipping rectangle {x, y, width, height}, each in 0...1, at `field`.
    mutating func clip(_ value: JSONValue?, field: String, named name: String) -> Thumbnail.Clip? {
        guard let value else { return nil }
        let values = ["x", "y", "width", "height"].compactMap { key -> Double? in
            guard case .number(let text)? = value.objectValue?[key], let number = Double(text), (0...1).contains(number) else {
                return nil
            }
            return number
        }
        guard values.count == 4 else {
            refuse(field, "\(name) needs x, y, width and height, each a number from 0 to 1")
            return nil
        }
        return Thumbnail.Clip(x: values[0], y: values[1], width: values[2], height: values[3])
    }
}
