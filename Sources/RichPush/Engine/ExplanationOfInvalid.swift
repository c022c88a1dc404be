extension Explanation {
    /// What `explain --json` (and the service's `/v1/explain`) writes for an input that is not a payload.
    package static func json(input: String, invalid error: PayloadError) -> PushPayload.JSON {
        .object(
            JSONObject([
                ("input", .text(input)),
                (
                    "invalid",
                    .object(JSONObject([("code", .text(error.code.rawValue)), ("detail", .text(error.detail))]))
                ),
            ]))
    }
}
