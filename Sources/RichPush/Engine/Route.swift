/// Where the app should go when the notification is opened, as custom push handlers read it: an `id` and a
/// `url`, taken from the custom data of the conventions that matched, then from the payload's root.
public struct Route: Sendable, Hashable {
    /// The content id, when one of the id keys held a string or a number.
    public var id: String?
    /// The deep link, when one of the URL keys held a string.
    public var url: String?

    /// Which keys hold a route. Defaults: ids in `id`, `route_id`, `content_id`; links in `deeplink`,
    /// `deep_link`, `uri`, `url`, `link`, `l` (Batch's deep link) — the names the SDKs and their users use most.
    public struct Keys: Sendable, Hashable {
        /// Keys of the id, in order of preference.
        public var id: [String] = ["id", "route_id", "content_id"]
        /// Keys of the URL, in order of preference.
        public var url: [String] = ["deeplink", "deep_link", "uri", "url", "link", "l"]

        /// The documented defaults.
        public init() {}
    }

    var json: JSONValue {
        var members: [(key: String, value: JSONValue)] = []
        if let id { members.append(("id", .text(id))) }
        if let url { members.append(("url", .text(url))) }
        return .object(JSONObject(members))
    }

    /// The route in `payload`: the first key found, searching each matched convention's custom data in
    /// convention order, then the root. Nil when neither an id nor a URL is found.
    static func find(in payload: Payload, conventions: [any MediaConvention], keys: Keys) -> Route? {
        var places: [JSONObject] = []
        var ignored = ConventionScan()
        for convention in conventions {
            for path in convention.customData {
                if case .object(let object)? = walk(payload, path, into: &ignored) { places.append(object) }
            }
        }
        places.append(payload.root)
        var route = Route()
        for place in places {
            if route.id == nil {
                for key in keys.id {
                    switch place[key] {
                    case .string(let text)? where !text.value.isEmpty: route.id = text.value
                    case .number(let text)?: route.id = text
                    default: continue
                    }
                    break
                }
            }
            if route.url == nil {
                for key in keys.url {
                    if let text = place[key]?.stringValue, !text.isEmpty {
                        route.url = text
                        break
                    }
                }
            }
        }
        return route.id == nil && route.url == nil ? nil : route
    }
}
