import RichPushConventions

/// Rewrites a payload's media URLs to their published ones: every string equal (byte for byte) to a published
/// source URL, wherever it lives, including inside strings that hold JSON (ZEGOCLOUD's `payload`, Notifee's
/// `notifee_options`, a custom convention's `@json` step at any key), which stay strings, encoded again only when
/// something in them changed.
enum PublishedRewrite {
    /// How many JSON strings deep the rewrite looks (a string inside a string inside ...): 8.
    static let jsonStringLevels = 8

    /// Rewrites the strings equal to a key of `urls`, and those whose text trimmed as OneSignal trims it
    /// (`OneSignalConvention.trimmed`) is a key of `trimmed`: OneSignal's published sources, which the payload
    /// may give with spaces around them.
    static func apply(
        _ urls: [ExactString: String], trimmed: [ExactString: String] = [:], to payload: inout PushPayload
    ) {
        guard !urls.isEmpty else { return }
        let rewritten = PushPayload.JSON.object(payload.root).replacingStrings(
            insideJSONStrings: .everywhere(levels: jsonStringLevels)
        ) { text in
            if let url = urls[ExactString(text.value)] { return .text(url) }
            guard !trimmed.isEmpty else { return nil }
            return trimmed[ExactString(OneSignalConvention.trimmed(text.value))].map { .text($0) }
        }
        if case .object(let root)? = rewritten { payload.root = root }
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
