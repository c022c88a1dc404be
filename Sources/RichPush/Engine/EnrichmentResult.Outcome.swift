extension EnrichmentResult {
    /// How a payload's processing ended. The raw values are stable and go into JSON output.
    public enum Outcome: String, Sendable, Hashable, CaseIterable, Codable {
        /// Every reference attached.
        case complete
        /// Some references attached, some failed.
        case partial
        /// The deadline came before every reference finished; what did finish is attached.
        case expired
        /// The payload has no media reference; it is returned as it came.
        case unchanged
        /// References were found, none attached.
        case failed
        /// The input is not a payload.
        case invalid
        /// The work was cancelled before it finished: by the caller (its task was cancelled) or by the engine
        /// shutting down (a payload arriving after shutdown began is not processed at all). What finished is attached.
        case cancelled
    }
}
