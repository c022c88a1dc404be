import RichPushCore

/// Where the app should go when the notification is opened, as custom push handlers read it: an `id` and a
/// `url`, each with where it was found. Searched first at the matched conventions' own keys (Airship `^d`,
/// OneSignal's launch URL `custom.u`, ...), then at the generic keys in their custom data, then at the generic
/// keys of the payload's root.
public struct DeepLinkRoute: Sendable, Hashable {
    /// The content id, when one of the id keys held a string or a number.
    public var id: String?
    /// The deep link, when one of the URL keys held a string.
    public var url: String?
    /// Where `id` was found.
    public var idSource: Source?
    /// Where `url` was found.
    public var urlSource: Source?

    /// Where a value of the route was found: the convention whose key (or custom data) held it, nil for the
    /// payload's root, and the key path from the root (`os_data.u`, `CIO.push.link`, `deeplink`).
    public struct Source: Sendable, Hashable {
        /// The convention's name; nil when a generic key at the root held it.
        public var convention: String?
        /// The key path from the payload's root, steps joined by `.` (`@json` steps left out).
        public var key: String

        /// A source.
        public init(convention: String?, key: String) {
            self.convention = convention
            self.key = key
        }

        package var json: PushPayload.JSON {
            .object(
                JSONObject(
                    (convention.map { [("convention", PushPayload.JSON.text($0))] } ?? []) + [("key", .text(key))]))
        }
    }

    /// The generic keys, looked up in each matched convention's custom data and at the root. Defaults: ids in
    /// `id`, `route_id`, `content_id`; links in `deeplink`, `deep_link`, `uri`, `url`, `link`, `l` (Batch's deep
    /// link) — the names the SDKs and their users use most.
    public struct Keys: Sendable, Hashable {
        /// Keys of the id, in order of preference.
        public var id: [String] = ["id", "route_id", "content_id"]
        /// Keys of the URL, in order of preference.
        public var url: [String] = ["deeplink", "deep_link", "uri", "url", "link", "l"]

        /// The documented defaults.
        public init() {}
    }

    package var json: PushPayload.JSON {
        var members: [(key: String, value: PushPayload.JSON)] = []
        if let id { members.append(("id", .text(id))) }
        if let url { members.append(("url", .text(url))) }
        if let idSource { members.append(("id_source", idSource.json)) }
        if let urlSource { members.append(("url_source", urlSource.json)) }
        return .object(JSONObject(members))
    }

    /// The route in `payload`: for the id and the URL alike, the first found of each matched convention's own
    /// route keys (in convention order), then the generic `keys` in each one's custom data, then the generic
    /// keys at the root. Nil when neither an id nor a URL is found.
    package static func find(in payload: PushPayload, conventions: [any MediaConvention], keys: Keys) -> DeepLinkRoute?
    {
        var route = DeepLinkRoute()
        var ignored = ConventionScan()
        // The vendors' own keys first: each is where that vendor's SDK opens the notification.
        for convention in conventions {
            for key in convention.routeKeys {
                guard key.applies(to: payload), let value = walk(payload, key.path, into: &ignored) else { continue }
                route.take(value, as: key.kind, from: Source(convention: convention.name, key: key.name))
            }
        }
        for convention in conventions {
            for path in convention.customData {
                if case .object(let object)? = walk(payload, path, into: &ignored) {
                    route.search(object, keys: keys, convention: convention.name, prefix: RouteKey.name(path))
                }
            }
        }
        route.search(payload.root, keys: keys, convention: nil, prefix: nil)
        return route.id == nil && route.url == nil ? nil : route
    }

    /// Takes the generic `keys` in `object` for the parts still missing; `prefix` is the object's key path.
    private mutating func search(_ object: JSONObject, keys: Keys, convention: String?, prefix: String?) {
        // The root's nine keys are asked of every payload, and most hold none: one pass over the object's keys
        // tells, before nine lookups each walk its members. (A key that String's equality takes for one of them,
        // canonically equivalent, only costs the lookups, which compare exactly.)
        var holdsOne = false
        object.forEachKey { key in
            if !holdsOne, keys.id.contains(key) || keys.url.contains(key) { holdsOne = true }
        }
        guard holdsOne else { return }
        // A part found is not looked up again, and a source is named only for a value taken.
        for key in keys.id where id == nil {
            take(object[key], as: .id, from: Source(convention: convention, key: prefix.map { "\($0).\(key)" } ?? key))
        }
        for key in keys.url where url == nil {
            take(object[key], as: .url, from: Source(convention: convention, key: prefix.map { "\($0).\(key)" } ?? key))
        }
    }

    /// Takes `value` as the id or the URL when that part is still missing and the value is usable: a non-empty
    /// string, or for an id also a number.
    private mutating func take(
        _ value: PushPayload.JSON?, as kind: RouteKey.Kind, from source: @autoclosure () -> Source
    ) {
        switch kind {
        case .id where id == nil:
            switch value {
            case .string(let text)? where !text.value.isEmpty: id = text.value
            case .number(let text)?: id = text
            default: return
            }
            idSource = source()
        case .url where url == nil:
            guard let text = value?.stringValue, !text.isEmpty else { return }
            url = text
            urlSource = source()
        default:
            return
        }
    }
}

extension DeepLinkRoute: Codable {
    /// Reads the output's `route` object (`json`).
    package init(json: PushPayload.JSON, path: String) throws {
        let fields = try JSONFields(json, path: path)
        self.init()
        id = try fields.string("id")
        url = try fields.string("url")
        idSource = try fields.object("id_source", Source.init(json:path:))
        urlSource = try fields.object("url_source", Source.init(json:path:))
    }

    public init(from decoder: any Decoder) throws { self = try PushPayload.JSON.decode(decoder, Self.init(json:path:)) }
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}

extension DeepLinkRoute.Source: Codable {
    /// Reads `{"convention", "key"}` (`json`).
    package init(json: PushPayload.JSON, path: String) throws {
        let fields = try JSONFields(json, path: path)
        self.init(convention: try fields.string("convention"), key: try fields.required(fields.string("key"), "key"))
    }

    public init(from decoder: any Decoder) throws { self = try PushPayload.JSON.decode(decoder, Self.init(json:path:)) }
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}

extension DeepLinkRoute {
    /// A route with nothing found yet (for the engine, which sets a fallback's deep link on a payload without one).
    package static var empty: DeepLinkRoute { DeepLinkRoute() }
}
