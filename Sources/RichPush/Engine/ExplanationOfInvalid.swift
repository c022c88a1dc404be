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

    /// What `explain` writes for an input that is not a payload, each line printable as an explanation's are (a name
    /// holding a line break would forge a line).
    package static func text(input: String, invalid error: PayloadError) -> String {
        [input, "  not a payload: \(error.code) (\(error.detail))"].map(TerminalText.printable).joined(separator: "\n")
            + "\n"
    }
}
