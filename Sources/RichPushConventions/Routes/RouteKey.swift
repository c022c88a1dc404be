import RichPushCore

/// A key path where a vendor's SDK reads the deep link (or the content id) it opens the notification with.
public struct RouteKey: Sendable, Hashable {
    /// What the key holds.
    public enum Kind: Sendable, Hashable {
        /// A content id.
        case id
        /// A deep link.
        case url
    }

    /// What the key holds.
    public var kind: Kind
    /// The keys from the payload's root (`@json` parses a JSON-encoded string on the way).
    public var path: [String]
    /// A sibling condition: the value counts only when the string at this path equals this text (Iterable's
    /// `defaultAction.data` is a URL only when `defaultAction.type` is `openUrl`).
    public var condition: Condition?

    /// The string at `path` must equal `equals`.
    public struct Condition: Sendable, Hashable {
        /// The keys from the payload's root.
        public var path: [String]
        /// The text the string there must equal.
        public var equals: String
    }

    /// A route key; with `condition`, it counts only when the string at `condition.path` equals
    /// `condition.equals`.
    public init(_ kind: Kind, _ path: [String], when condition: (path: [String], equals: String)? = nil) {
        self.kind = kind
        self.path = path
        self.condition = condition.map { Condition(path: $0.path, equals: $0.equals) }
    }

    /// The path as a route's `key`: steps joined by `.`, `@json` steps left out.
    var name: String { Self.name(path) ?? "" }

    static func name(_ path: [String]) -> String? {
        let steps = path.filter { $0 != KeyPathConvention.jsonStep }
        return steps.isEmpty ? nil : steps.joined(separator: ".")
    }

    func applies(to payload: PushPayload) -> Bool {
        guard let condition else { return true }
        var ignored = ConventionScan()
        return walk(payload, condition.path, into: &ignored)?.stringValue == condition.equals
    }
}
