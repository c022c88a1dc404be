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
    func scan(_ payload: PushPayload) -> ConventionScan

    /// Key paths (with `@json` steps, as `KeyPathConvention`) to the objects where the vendor keeps the app's
    /// custom data, searched for a route before the payload's root. Default: none.
    var customData: [[String]] { get }

    /// Where the vendor's own SDK reads the deep link (or content id) it opens the notification with (Airship
    /// `^d`, OneSignal `custom.u`), searched for a route before any generic key. Default: none.
    var routeKeys: [RouteKey] { get }

    /// Keys of the payload's root of which `scan` needs at least one to find anything: given a payload whose root
    /// holds none of them, `scan` returns an empty `ConventionScan` (no reference, no problem, no override), and
    /// `ConventionRegistry` skips the convention without calling it. Keys are compared by what they mean, as
    /// `JSONObject` looks them up. Default nil: the convention does not say, and every payload is scanned.
    var rootKeys: [String]? { get }
}

extension MediaConvention {
    public var customData: [[String]] { [] }
    public var routeKeys: [RouteKey] { [] }
    public var rootKeys: [String]? { nil }
}
