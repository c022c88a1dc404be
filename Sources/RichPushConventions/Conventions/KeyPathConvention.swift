import RichPushCore

/// Conventions that read one URL (and perhaps a declared type) at a fixed key path, each checked against the
/// vendor's own extension source.

/// Walks `path` from the payload's root through objects; the step `@json` parses the current string as JSON
/// first (a vendor that sends a JSON-encoded string; one that is not JSON carries nothing; an object passes). Returns
/// the value, or nil when a key is absent or a step that must be an object is not one. Such a step is a
/// `bad-reference` problem (once, however many paths cross it), but for a root key of `KeyPathConvention.genericRoots`
/// (`data`, `body`) unless `strictly` (a schema every value must follow, FCM's): another sender's use of the name
/// (a string of its own, a deep link), where the vendor's SDK reads nothing.
func walk(
    _ payload: PushPayload, _ path: [String], into scan: inout ConventionScan, strictly: Bool = false
) -> PushPayload.JSON? {
    var current: PushPayload.JSON = .object(payload.root)
    var entered = 0
    for (index, key) in path.enumerated() {
        if key == KeyPathConvention.jsonStep {
            // A JSON-encoded string is parsed; an object (vendors send either) passes as it is.
            if case .object = current { continue }
            guard case .string(let text) = current,
                case .some(let parsed) = try? JSONParser().parse(Array(text.value.utf8))
            else { return nil }
            current = parsed
            continue
        }
        guard case .object(let object) = current else {
            // A generic root holding something else is another sender's (unless the schema is strict).
            if !strictly, entered <= 1, let root = KeyPathConvention.rootKey(of: path),
                KeyPathConvention.genericRoots.contains(root)
            {
                return nil
            }
            let field = path[..<index].joined(separator: ".")
            let problem = EnrichmentProblem(
                source: field, code: .badReference,
                detail: "\(field) holds \(current.kindDescription); expected an object")
            if !scan.problems.contains(problem) { scan.problems.append(problem) }
            return nil
        }
        guard let next = object[key] else { return nil }
        current = next
        entered += 1
    }
    return current
}

/// A convention that reads one URL string at a fixed key path through nested objects. The vendors below are
/// instances, each path checked against the vendor's own extension source.
public struct KeyPathConvention: MediaConvention {
    public let name: String
    /// Where the vendor keeps the app's custom data, searched for a route.
    public var customData: [[String]] = []
    /// Where the vendor's SDK reads its deep link, searched for a route first.
    public var routeKeys: [RouteKey] = []
    /// The keys from the payload's root to the URL; `@json` parses a JSON-encoded string on the way.
    public let path: [String]
    /// The keys to the declared type (the attachment's `type_hint`), if the vendor sends one.
    public let hintPath: [String]?
    /// The attachment identifier.
    public let identifier: String
    /// What must be in the payload for the URL to be read (the vendor's marker); nil when the key is the vendor's
    /// own.
    public var marker: VendorMarker?
    /// The object whose `title`, `subtitle` and `body` replace the alert's when the URL attached (Swrve's
    /// `_sw.media`); nil when the vendor sends none.
    public var mediaTextPath: [String]?
    /// The string that becomes the alert body when the URL did not attach (Salesforce's `_mediaAlt`); nil when the
    /// vendor sends none.
    public var missingMediaBodyPath: [String]?
    /// The URL fetched when the first fails (Swrve's `_sw.media.fallback_url`), and the deep link that becomes the
    /// route when it is the one attached (`fallback_sd`); nil when the vendor sends none.
    public var fallbackPaths: (url: [String], route: [String])?

    /// The path step that parses the current string value as JSON.
    public static let jsonStep = "@json"

    /// Root keys other senders use for their own values too (Amplify's `data`, Expo's `body`): one holding no
    /// object on a convention's path is not that vendor's, and no problem. A vendor's own root (`ab`, `itbl`,
    /// `_sw`) holding something else is a `bad-reference`.
    public static let genericRoots: Set<String> = ["data", "body"]

    /// A convention reading the URL at `path` (and a declared type at `hintPath`).
    public init(name: String, path: [String], hintPath: [String]? = nil, identifier: String) {
        self.name = name
        self.path = path
        self.hintPath = hintPath
        self.identifier = identifier
    }

    /// The first key of the marker's path when the vendor has one (without it nothing is read), else the first keys
    /// of `path` and `hintPath` (the texts and the fallback are read only once the URL is found). Nil when one of
    /// those paths has no key but `@json` steps, which read the root itself.
    public var rootKeys: [String]? {
        if let marker { return Self.rootKey(of: marker.path).map { [$0] } }
        guard let key = Self.rootKey(of: path) else { return nil }
        guard let hintPath else { return [key] }
        return Self.rootKey(of: hintPath).map { [key, $0] }
    }

    /// The first key `walk` looks up in the root: `@json` steps on the root object pass.
    static func rootKey(of path: [String]) -> String? { path.first { $0 != jsonStep } }

    public func scan(_ payload: PushPayload) -> ConventionScan {
        var scan = ConventionScan()
        // Another sender's payload may use the same generic key: without the marker it is not the vendor's.
        if let marker, !marker.isPresent(in: payload) { return scan }
        let value = walk(payload, path, into: &scan)
        var hint: String?
        if let hintPath, let declared = walk(payload, hintPath, into: &scan) {
            hint = scan.string(declared, field: hintPath.joined(separator: "."))
        }
        // The dotted field names are made only when there is something to name (every payload is scanned by
        // every convention, and most have none of its keys).
        guard let value else { return scan }
        scan.take(value, field: path.joined(separator: "."), convention: name, identifier: identifier, typeHint: hint)
        // The text goes with a URL the vendor's SDK would download: none for a field that holds no string.
        if let url = value.stringValue {
            texts(payload, url: url, into: &scan)
            scan.references[scan.references.count - 1].fallback = fallback(payload, into: &scan)
        }
        return scan
    }

    /// The fallback the vendor gives beside the URL, when there is one (a string, else `bad-reference`).
    private func fallback(_ payload: PushPayload, into scan: inout ConventionScan) -> MediaReference.Fallback? {
        guard let fallbackPaths, let value = walk(payload, fallbackPaths.url, into: &scan) else { return nil }
        let field = fallbackPaths.url.joined(separator: ".")
        guard !scan.refusesLoneSurrogate(value, field: field) else { return nil }
        guard let url = value.stringValue else {
            scan.problems.append(
                EnrichmentProblem(
                    source: field, code: .badReference,
                    detail: "\(field) holds \(value.kindDescription); a media URL is a string"))
            return nil
        }
        let routeField = fallbackPaths.route.joined(separator: ".")
        let route = walk(payload, fallbackPaths.route, into: &scan).flatMap { scan.string($0, field: routeField) }
        return MediaReference.Fallback(url: url, field: field, route: route, routeField: route.map { _ in routeField })
    }

    /// The alert text the vendor ties to `url`: its media text (applied when `url` attached) and its text for a
    /// missing media (applied when it did not), each as an override.
    private func texts(_ payload: PushPayload, url: String, into scan: inout ConventionScan) {
        if let mediaTextPath, let found = walk(payload, mediaTextPath, into: &scan) {
            let field = mediaTextPath.joined(separator: ".")
            if let object = scan.object(found, field: field, expected: "an object") {
                var override = scan.alertText(object, field: field)
                override.requiredURLs = [url]
                if override.title != nil || override.subtitle != nil || override.body != nil {
                    scan.overrides.append(override)
                }
            }
        }
        if let missingMediaBodyPath, let found = walk(payload, missingMediaBodyPath, into: &scan),
            let body = scan.string(found, field: missingMediaBodyPath.joined(separator: "."))
        {
            var override = AlertOverride(body: body)
            override.missingURLs = [url]
            scan.overrides.append(override)
        }
    }

    /// Firebase Cloud Messaging: `fcm_options.image` (FIRMessagingExtensionHelper, which then names the file
    /// after the server's suggested file name: how a JPEG ends up as `.php`).
    public static let firebase = KeyPathConvention(
        name: "fcm", path: ["fcm_options", "image"], identifier: "fcm_image")
    /// Braze: `ab` → `att` → `url`, with `type` (a file suffix such as `jpg`) as the `type_hint`
    /// (AppboyAPNSDictionaryKey, AttachmentKey, AttachmentURLKey and AttachmentTypeKey in Braze's notification
    /// service sample; Braze names the file after the declared type).
    /// Its deep link is `ab_uri`.
    public static let braze: KeyPathConvention = {
        var convention = KeyPathConvention(
            name: "braze", path: ["ab", "att", "url"], hintPath: ["ab", "att", "type"], identifier: "braze_att")
        convention.routeKeys = [RouteKey(.url, ["ab_uri"])]
        return convention
    }()
    /// Iterable: `itbl` → `attachment-url` (ITBNotificationServiceExtension; JsonKey.Payload in the swift-sdk).
    /// Its deep link is `itbl.defaultAction.data` when `defaultAction.type` is `openUrl` (any other type names a
    /// custom action, and `data` is that action's argument).
    public static let iterable: KeyPathConvention = {
        var convention = KeyPathConvention(
            name: "iterable", path: ["itbl", "attachment-url"], identifier: "itbl_attachment")
        convention.routeKeys = [
            RouteKey(.url, ["itbl", "defaultAction", "data"], when: (["itbl", "defaultAction", "type"], "openUrl"))
        ]
        return convention
    }()
    /// Customer.io: `CIO` → `push` → `image` (the rich push payload of Customer.io's iOS SDK). The identifier
    /// starts with `cio_sdk_`, the prefix by which Customer.io's SDK finds its own attachments (to remove their
    /// files once the push is opened).
    public static let customerIO: KeyPathConvention = {
        var convention = KeyPathConvention(
            name: "customerio", path: ["CIO", "push", "image"], identifier: "cio_sdk_image")
        convention.customData = [["CIO", "push"]]
        return convention
    }()
    /// AWS Amplify / Pinpoint: `data` → `media-url` (PinpointNotificationPayload in Amplify's notification
    /// utilities).
    public static let amplify: KeyPathConvention = {
        var convention = KeyPathConvention(name: "amplify", path: ["data", "media-url"], identifier: "media-url")
        convention.customData = [["data"], ["data", "pinpoint"]]
        return convention
    }()
}
