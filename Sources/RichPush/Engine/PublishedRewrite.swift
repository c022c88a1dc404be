/// Rewrites a payload's media URLs to their published ones: every string equal (byte for byte) to a published
/// source URL, wherever it lives, including inside the JSON strings ZEGOCLOUD (`payload`) and Notifee
/// (`notifee_options`) carry, which stay strings.
enum PublishedRewrite {
    static func apply(_ urls: [ExactString: String], to payload: inout PushPayload) {
        guard !urls.isEmpty else { return }
        let rewritten = PushPayload.JSON.object(payload.root).replacingStrings(
            insideJSONStringsAt: TemplateRenderer.jsonStringKeys
        ) {
            urls[ExactString($0.value)].map { .text($0) }
        }
        if case .object(let root)? = rewritten { payload.root = root }
    }
}
