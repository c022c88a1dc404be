import RichPushCore

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
    /// URLs of which at least one must be missing from the attachments for the override to apply (Salesforce's
    /// `_mediaAlt`, the text for when the media failed, for any reason). Empty: no such condition.
    public var missingURLs: [String] = []

    /// An override.
    public init(title: String? = nil, subtitle: String? = nil, body: String? = nil) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
    }

    /// Whether the override applies once the URLs `attached` are attached: every required URL is among them, and
    /// some missing URL (when there are any) is not; URLs compared byte for byte (`ExactString`).
    package func applies(attached: [String]) -> Bool {
        let isAttached = { (url: String) in attached.contains { ExactString.same($0, url) } }
        return requiredURLs.allSatisfy(isAttached) && (missingURLs.isEmpty || missingURLs.contains { !isAttached($0) })
    }

    /// Applies the override to a payload's `aps.alert`, making it an object when it was a string (the string
    /// becomes its body) and keeping every other key where it was, but the localization keys of each text it
    /// replaces (`title-loc-key` and `title-loc-args` for a title, `subtitle-loc-*`, `loc-key` and `loc-args` for a
    /// body): iOS shows a localized text over the plain one, where the vendor's extension on the phone replaced the
    /// text iOS had already localized.
    package func apply(to payload: inout PushPayload) {
        guard title != nil || subtitle != nil || body != nil else { return }
        var aps = payload.root["aps"]?.objectValue ?? JSONObject()
        var alert: JSONObject
        switch aps["alert"] {
        case .object(let object)?: alert = object
        case .string(let text)?: alert = JSONObject([("body", .string(text))])
        default: alert = JSONObject()
        }
        for (key, text, localization) in [
            ("title", title, "title-loc-"), ("subtitle", subtitle, "subtitle-loc-"), ("body", body, "loc-"),
        ] {
            guard let text else { continue }
            alert.set(key, .text(text))
            if alert[localization + "key"] != nil || alert[localization + "args"] != nil {
                alert.remove(localization + "key")
                alert.remove(localization + "args")
            }
        }
        aps.set("alert", .object(alert))
        payload.root.set("aps", .object(aps))
    }
}
