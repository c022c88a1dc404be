import RichPushCore

/// OneSignal: `att`, an object of attachment id to URL, as OneSignal's iOS SDK reads it (OSNotification in
/// OneSignal/OneSignal-iOS-SDK): under `os_data` when `os_data` is an object (the current format), else at the
/// top level (the original format); in a remote silent notification (no `aps.alert`), the minified `at` under
/// `os_data.buttons`, or beside `m` at the top level. Each entry is one attachment; its id is the identifier.
///
/// As OneSignal's attachment handler does, a value is trimmed of surrounding spaces and tabs, and one without a
/// scheme names a file in the app's bundle (`sale.png`), which only the device has: it is reported as
/// `on-device`, not fetched. An id written twice is read once, its last value, as the phone's dictionary holds it.
public struct OneSignalConvention: MediaConvention {
    public var name: String { Self.name }
    /// The convention's name.
    package static let name = "onesignal"

    /// Where the app's custom data lives, searched for a route.
    public var customData: [[String]] { Self.customDataPaths }
    private static let customDataPaths: [[String]] = [["custom", "a"]]

    /// The launch URL: `os_data.u` in the current format, `custom.u` in the original one.
    public var routeKeys: [RouteKey] { Self.routes }
    private static let routes: [RouteKey] = [RouteKey(.url, ["os_data", "u"]), RouteKey(.url, ["custom", "u"])]

    /// Where the attachment objects can be, each by its path: what publishing rewrites of them (`att` under
    /// `os_data` or at the top level, `at` under `os_data.buttons` or at the top level).
    package static let attachmentPaths: [[String]] = [
        ["os_data", "att"], ["os_data", "buttons", "at"], ["att"], ["at"],
    ]

    /// `os_data`, `at` or `att`: where the attachments are (`aps` and `m` only choose among them).
    public var rootKeys: [String]? { ["os_data", "at", "att"] }

    /// The convention.
    public init() {}

    public func scan(_ payload: PushPayload) -> ConventionScan {
        var scan = ConventionScan()
        let field: String
        let value: PushPayload.JSON?
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
            scan.problems.append(
                EnrichmentProblem(
                    source: field, code: .badReference,
                    detail: "\(field) holds \(value.kindDescription); OneSignal sends an object of id to URL"))
            return scan
        }
        // An id given twice is one entry on the phone (the dictionary keeps the last): only its last is read.
        let members = attachments.members
        var lastIndex: [ExactString: Int] = [:]
        for (index, member) in members.enumerated() { lastIndex[ExactString(member.key.value)] = index }
        for (index, member) in members.enumerated() where lastIndex[ExactString(member.key.value)] == index {
            let identifier = member.key.value
            var value = member.value
            if let text = value.stringValue {
                let trimmed = Self.trimmed(text)
                if !trimmed.isEmpty, !Self.hasScheme(trimmed) {
                    scan.problems.append(
                        EnrichmentProblem(
                            source: "\(field).\(identifier)", code: .onDevice,
                            detail:
                                "'\(trimmed)' names a file in the app's bundle; "
                                + "OneSignal's extension attaches it on the device"
                        ))
                    continue
                }
                // One escaping a lone surrogate is left as it came, for `take` to refuse.
                var escapesLoneSurrogate = false
                if case .string(let escaped) = value { escapesLoneSurrogate = escaped.hasLoneSurrogate }
                if !escapesLoneSurrogate { value = .text(trimmed) }
            }
            scan.take(value, field: "\(field).\(identifier)", convention: name, identifier: identifier)
        }
        return scan
    }

    /// `text` without leading and trailing tabs and space separators (Unicode's Zs: NSCharacterSet's
    /// whitespaceCharacterSet, which OneSignal trims with; line breaks stay).
    package static func trimmed(_ text: String) -> String {
        let isBlank: (Character) -> Bool = { character in
            character == "\t"
                || character.unicodeScalars.allSatisfy { $0.properties.generalCategory == .spaceSeparator }
        }
        var scalars = Substring(text)
        while let first = scalars.first, isBlank(first) { scalars = scalars.dropFirst() }
        while let last = scalars.last, isBlank(last) { scalars = scalars.dropLast() }
        return String(scalars)
    }

    /// Whether `text` starts with a URL scheme: a letter, then letters, digits, `+`, `-` or `.`, then `:` (RFC 3986).
    static func hasScheme(_ text: String) -> Bool {
        let isLetter: (UInt8) -> Bool = { (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
        let scheme = text.utf8.prefix { $0 != UInt8(ascii: ":") }
        guard scheme.count < text.utf8.count, let first = scheme.first, isLetter(first) else { return false }
        return scheme.allSatisfy { isLetter($0) || (0x30...0x39).contains($0) || "+-.".utf8.contains($0) }
    }
}
