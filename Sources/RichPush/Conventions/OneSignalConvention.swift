/// OneSignal: `att`, an object of attachment id to URL, as OneSignal's iOS SDK reads it (OSNotification in
/// OneSignal/OneSignal-iOS-SDK): under `os_data` when `os_data` is an object (the current format), else at the
/// top level (the original format); in a remote silent notification (no `aps.alert`), the minified `at` under
/// `os_data.buttons`, or beside `m` at the top level. Each entry is one attachment; its id is the identifier.
public struct OneSignalConvention: MediaConvention {
    public var name: String { "onesignal" }

    /// Where the app's custom data lives, searched for a route.
    public var customData: [[String]] { [["custom", "a"]] }

    /// The launch URL: `os_data.u` in the current format, `custom.u` in the original one.
    public var routeKeys: [RouteKey] { [RouteKey(.url, ["os_data", "u"]), RouteKey(.url, ["custom", "u"])] }

    /// The convention.
    public init() {}

    public func scan(_ payload: Payload) -> ConventionScan {
        var scan = ConventionScan()
        let field: String
        let value: JSONValue?
        // A "remote silent" notification (no aps.alert) carries its fields minified: `at` under os_data.buttons,
        // or at the top level beside `m` in the original format (OSNotification.parseRemoteSlient).
        let hasAlert = payload.root["aps"]?.objectValue?["alert"] != nil
        if case .object(let osData)? = payload.root["os_data"] {
            if !hasAlert, case .object(let buttons)? = osData["buttons"] {
                field = "os_data.buttons.at"
                value = buttons["at"]
            } else {
                field = "os_data.att"
                value = osData["att"]
            }
        } else if !hasAlert, payload.root["m"] != nil {
            field = "at"
            value = payload.root["at"]
        } else {
            field = "att"
            value = payload.root["att"]
        }
        guard let value else { return scan }
        guard case .object(let attachments) = value else {
            scan.problems.append(Problem(source: field, code: .badReference, detail: "\(field) holds \(value.kindDescription); OneSignal sends an object of id to URL"))
            return scan
        }
        for member in attachments.members {
            let identifier = member.key.value
            scan.take(member.value, field: "\(field).\(identifier)", convention: name, identifier: identifier)
        }
        return scan
    }
}
