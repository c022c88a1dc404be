import RichPushConventions

/// Rewrites a payload's media URLs to their published ones: every string equal (byte for byte) to a published
/// source URL, wherever it lives, including inside strings that hold JSON (ZEGOCLOUD's `payload`, Notifee's
/// `notifee_options`, a custom convention's `@json` step at any key), which stay strings, encoded again only when
/// something in them changed.
enum PublishedRewrite {
    /// How many JSON strings deep the rewrite looks (a string inside a string inside ...): 8.
    static let jsonStringLevels = 8

    /// Rewrites the strings equal to a key of `urls`; and in OneSignal's attachment objects
    /// (`OneSignalConvention.attachmentPaths`), those whose text trimmed as OneSignal trims it is a key of
    /// `trimmed`: OneSignal's published sources, which its payloads may give with spaces around them.
    static func apply(
        _ urls: [ExactString: String], trimmed: [ExactString: String] = [:], to payload: inout PushPayload
    ) {
        guard !urls.isEmpty else { return }
        let rewritten = PushPayload.JSON.object(payload.root).replacingStrings(
            insideJSONStrings: .everywhere(levels: jsonStringLevels)
        ) {
            urls[ExactString($0.value)].map { .text($0) }
        }
        if case .object(let root)? = rewritten { payload.root = root }
        guard !trimmed.isEmpty else { return }
        for path in OneSignalConvention.attachmentPaths {
            payload.root = rewriting(payload.root, at: path[...]) { attachments in
                var members = attachments.members
                var changed = false
                for index in members.indices {
                    guard let text = members[index].value.stringValue,
                        let url = trimmed[ExactString(OneSignalConvention.trimmed(text))]
                    else { continue }
                    members[index].value = .text(url)
                    changed = true
                }
                if changed { attachments.members = members }
            }
        }
    }

    /// `object` with `change` made to the object at `path` in it, when there is one.
    private static func rewriting(
        _ object: JSONObject, at path: ArraySlice<String>, _ change: (inout JSONObject) -> Void
    ) -> JSONObject {
        guard let key = path.first, case .object(let inner)? = object[key] else { return object }
        var changed = inner
        if path.count == 1 { change(&changed) } else { changed = rewriting(inner, at: path.dropFirst(), change) }
        guard changed != inner else { return object }
        var object = object
        object.set(key, .object(changed))
        return object
    }

    /// The published URL of each attachment published, by its source URL; OneSignal's apart as well (`apply`'s
    /// `trimmed`), for `platform` alone when given.
    static func urls(
        of attachments: [EnrichmentResult.Attachment], for platform: DevicePlatform? = nil
    ) -> (exact: [ExactString: String], trimmed: [ExactString: String]) {
        var exact: [ExactString: String] = [:]
        var trimmed: [ExactString: String] = [:]
        // By index: `for attachment in attachments` copied each attachment (a retain of each of its strings).
        for index in attachments.indices where platform == nil || attachments[index].platform == platform {
            guard case .published(let url)? = attachments[index].media.publication else { continue }
            exact[ExactString(attachments[index].source)] = url
            if attachments[index].convention == OneSignalConvention.name {
                trimmed[ExactString(attachments[index].source)] = url
            }
        }
        return (exact, trimmed)
    }
}
