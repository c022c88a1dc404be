/// A media file fetched, typed and stored.
public struct FetchedMedia: Sendable, Hashable {
    /// The absolute path of the stored file, `<root>/<uuid>/<uuid>.<ext>`.
    public var path: String
    /// The directory made for it alone.
    public var directory: String
    /// The type the bytes are.
    public var type: MediaType
    /// The byte count.
    public var bytes: Int
    /// The SHA-256 of the bytes, lowercase hex.
    public var sha256: String
    /// The response's validators, for revalidating a cached copy.
    public var validators = Validators()
    /// What the transformation step did, when it changed the fetched bytes; nil when they are attached as fetched.
    public var transformation: Transformation? = nil
    /// An image's width and height when its first bytes said them (PNG, JPEG), else nil.
    public var dimensions: ImageSize? = nil
    /// Why the image is not whole, when it is attached all the same (a JPEG or GIF whose picture data began: a
    /// phone shows what decodes): found by the structure check every fetched JPEG, PNG and GIF has (cut short,
    /// a broken block structure), or by a verifying decode (`Enricher.Configuration.Transform.verifyImages`); nil otherwise.
    public var damage: String? = nil
    /// Where it was published (`Enricher.Configuration.publisher`), or why it could not be; nil when nothing publishes.
    public var publication: Publication? = nil

    /// The outcome of publishing an attachment.
    public enum Publication: Sendable, Hashable {
        /// Published at this URL.
        case published(String)
        /// Not published, for this reason; the attachment stays, the content keeps the sender's URL.
        case failed(String)
    }

    /// A stored file's description (for test doubles; RichPush makes these as it stores).
    public init(
        path: String, directory: String, type: MediaType, bytes: Int, sha256: String, validators: Validators = Validators(),
        transformation: Transformation? = nil, dimensions: ImageSize? = nil
    ) {
        self.path = path
        self.directory = directory
        self.type = type
        self.bytes = bytes
        self.sha256 = sha256
        self.validators = validators
        self.transformation = transformation
        self.dimensions = dimensions
    }
}
