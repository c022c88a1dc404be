/// Rewrites a payload's media URLs to their published ones: every string equal (byte for byte) to a published
/// source URL, wherever it lives, including inside strings that hold JSON (ZEGOCLOUD's `payload`, Notifee's
/// `notifee_options`, a custom convention's `@json` step at any key), which stay strings, encoded again only when
/// something in them changed.
enum PublishedRewrite {
    /// How many JSON strings deep the rewrite looks (a string inside a string inside ...): 8.
    static let jsonStringLevels = 8

    static func apply(_ urls: [ExactString: String], to payload: inout PushPayload) {
        guard !urls.isEmpty else { return }
        let rewritten = PushPayload.JSON.object(payload.root).replacingStrings(
            insideJSONStrings: .everywhere(levels: jsonStringLevels)
        ) {
            urls[ExactString($0.value)].map { .text($0) }
        }
        if case .object(let root)? = rewritten { payload.root = root }
    }
}
