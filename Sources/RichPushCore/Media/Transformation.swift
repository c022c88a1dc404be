/// What the transformation step did to a fetched image: the attached file (`FetchedMedia`'s path, type, bytes and
/// hash) is the result; this records how it came to be and what was fetched.
public struct Transformation: Sendable, Hashable {
    /// One thing done. The raw values are stable and go into JSON output (`transformed`).
    public enum Step: String, Sendable, Hashable, CaseIterable {
        /// Written as another type (WebP to JPEG, SVG to PNG...).
        case transcoded
        /// Resized to fit the image cap or `transform.maximumDimension`.
        case downscaled
        /// Without EXIF, XMP, IPTC or text metadata: re-encoded (every re-encode is), or a PNG's chunks filtered.
        case metadataStripped = "metadata-stripped"
        /// Only the first frame of an animation was kept.
        case firstFrame = "first-frame"
    }

    /// What was fetched, before the transformation.
    public struct Original: Sendable, Hashable {
        /// The type its bytes are.
        public var type: MediaType
        /// Its size.
        public var bytes: Int
        /// Its SHA-256, lowercase hex.
        public var sha256: String

        public init(type: MediaType, bytes: Int, sha256: String) {
            self.type = type
            self.bytes = bytes
            self.sha256 = sha256
        }
    }

    /// What was done, in this order: transcoded, downscaled, metadata-stripped, first-frame.
    public var steps: [Step]
    /// What was fetched.
    public var original: Original

    public init(steps: [Step], original: Original) {
        self.steps = steps
        self.original = original
    }
}
