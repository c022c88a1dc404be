extension EnrichmentResult {
    /// One attachment made for a payload.
    public struct Attachment: Sendable, Hashable {
        /// Unique within the payload (from the convention's field), as UNNotificationAttachment's identifier.
        public var identifier: String
        /// The URL it was fetched from, as the payload gave it.
        public var source: String
        /// The convention that found the URL.
        public var convention: String
        /// The stored file.
        public var media: FetchedMedia
        /// The thumbnail options the vendor gave, if any.
        public var thumbnail: Thumbnail? = nil
        /// The type the payload declared, as written, if any.
        public var typeHint: String? = nil
        /// How many fetches it took (1 without a retry; see `RetryPolicy`).
        public var attempts: Int = 1

        /// An attachment (for test doubles and callers that build results themselves).
        public init(
            identifier: String, source: String, convention: String, media: FetchedMedia, thumbnail: Thumbnail? = nil,
            typeHint: String? = nil, attempts: Int = 1
        ) {
            self.identifier = identifier
            self.source = source
            self.convention = convention
            self.media = media
            self.thumbnail = thumbnail
            self.typeHint = typeHint
            self.attempts = attempts
        }
    }
}
