/// A media file fetched, typed and stored.
///
/// Its fields are kept in one box its copies share (`SharedFields`): the value is one pointer (inline, 353 bytes).
public struct FetchedMedia: Sendable, Hashable {
    /// The absolute path of the stored file, `<root>/<uuid>/<uuid>.<ext>`.
    public var path: String {
        get { stored.fields.path }
        set { stored.fields.path = newValue }
    }
    /// The directory made for it alone.
    public var directory: String {
        get { stored.fields.directory }
        set { stored.fields.directory = newValue }
    }
    /// The type the bytes are.
    public var type: MediaType {
        get { stored.fields.type }
        set { stored.fields.type = newValue }
    }
    /// The byte count.
    public var bytes: Int {
        get { stored.fields.bytes }
        set { stored.fields.bytes = newValue }
    }
    /// The SHA-256 of the bytes, lowercase hex.
    public var sha256: String {
        get { stored.fields.sha256 }
        set { stored.fields.sha256 = newValue }
    }
    /// The response's validators, for revalidating a cached copy.
    public var validators: Validators {
        get { stored.fields.validators }
        set { stored.fields.validators = newValue }
    }
    /// What the transformation step did, when it changed the fetched bytes; nil when they are attached as fetched.
    public var transformation: Transformation? {
        get { stored.fields.transformation }
        set { stored.fields.transformation = newValue }
    }
    /// An image's width and height when its first bytes said them (PNG, JPEG), else nil.
    public var dimensions: ImageSize? {
        get { stored.fields.dimensions }
        set { stored.fields.dimensions = newValue }
    }
    /// Why the image is not whole, when it is attached all the same (a JPEG or GIF whose picture data began: a
    /// phone shows what decodes): found by the structure check every fetched JPEG, PNG and GIF has (cut short,
    /// a broken block structure), or by a verifying decode (`Enricher.Configuration.Transform.verifyImages`); nil
    /// otherwise.
    public var damage: String? {
        get { stored.fields.damage }
        set { stored.fields.damage = newValue }
    }
    /// Where it was published (`Enricher.Configuration.publisher`), or why it could not be; nil when nothing publishes.
    public var publication: Publication? {
        get { stored.fields.publication }
        set { stored.fields.publication = newValue }
    }
    /// Where the fetch that stored it went (its redirects) and the Content-Type its origin sent; kept by the media
    /// cache for every payload it serves, and by the transformation. Nil when it was not fetched (a test double).
    public var provenance: Provenance? {
        get { stored.fields.provenance }
        set { stored.fields.provenance = newValue }
    }
    /// The stored file as it was made (its device, inode, modification time and size, from `fstat` on the open
    /// file before its rename), so that what serves it can tell the file it made from one put in its place since,
    /// without a look-up by path per attachment; a link the media cache makes to it is the same file. Nil when not
    /// known (read from JSON, a test double). Not in the output or the JSON: it is this host's, at this moment.
    package var identity: FileIdentity? {
        get { stored.fields.identity }
        set { stored.fields.identity = newValue }
    }

    /// The stored fields, as the accessors above say them.
    private struct Fields: Hashable, Sendable {
        var path: String
        var directory: String
        var type: MediaType
        var bytes: Int
        var sha256: String
        var validators: Validators
        var transformation: Transformation?
        var dimensions: ImageSize?
        var damage: String? = nil
        var publication: Publication? = nil
        var provenance: Provenance? = nil
        var identity: FileIdentity? = nil
    }

    /// Where the fields are: the value's one stored property.
    private var stored: SharedFields<Fields>

    /// The outcome of publishing an attachment.
    public enum Publication: Sendable, Hashable {
        /// Published at this URL.
        case published(String)
        /// Not published, for this reason; the attachment stays, the content keeps the sender's URL.
        case failed(String)
    }

    /// A stored file's description (for test doubles; RichPush makes these as it stores).
    public init(
        path: String, directory: String, type: MediaType, bytes: Int, sha256: String,
        validators: Validators = Validators(),
        transformation: Transformation? = nil, dimensions: ImageSize? = nil
    ) {
        stored = SharedFields(
            Fields(
                path: path, directory: directory, type: type, bytes: bytes, sha256: sha256, validators: validators,
                transformation: transformation, dimensions: dimensions))
    }
}

extension FetchedMedia: CustomReflectable {
    /// Its fields, as a struct's are shown (`dump`, a test's failed expectation), rather than its box.
    public var customMirror: Mirror {
        stored.mirror(of: self)
    }
}

extension FetchedMedia: Codable {
    /// The members the media adds to its attachment's object, in the output's order: `path`, then `type`, `mime`,
    /// `bytes`, `sha256`, then `transformed` and `original` when transformed, `published_url` when published.
    /// What the output leaves out (the directory, validators, dimensions, damage, a failed publication, the
    /// provenance) comes with `complete`.
    package func members(complete: Bool) -> (
        path: [(key: String, value: PushPayload.JSON)], rest: [(key: String, value: PushPayload.JSON)]
    ) {
        var rest: [(key: String, value: PushPayload.JSON)] = [
            ("type", .text(type.uti)), ("mime", .text(type.mime)), ("bytes", .integer(bytes)),
            ("sha256", .text(sha256)),
        ]
        if let transformation { rest += transformation.members }
        if let publication, complete || publication.isPublished { rest.append(publication.member) }
        if complete {
            rest.append(("directory", .text(directory)))
            if !validators.isEmpty { rest.append(("validators", validators.json)) }
            if let dimensions { rest.append(("dimensions", dimensions.json)) }
            if let damage { rest.append(("damage", .text(damage))) }
            if let provenance { rest.append(("provenance", provenance.json)) }
        }
        return ([("path", .text(path))], rest)
    }

    /// The media an object's members say: those `members(complete:)` writes. Without `directory` (an attachment of
    /// the output), the directory is the path's: each attachment has a directory of its own.
    package init(fields: JSONFields) throws {
        let path = try fields.required(fields.string("path"), "path")
        let directory = try fields.string("directory") ?? String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        self.init(
            path: path, directory: directory, type: try MediaType(fields: fields),
            bytes: try fields.required(fields.int("bytes"), "bytes"),
            sha256: try fields.required(fields.string("sha256"), "sha256"),
            validators: try fields.object("validators", Validators.init(json:path:)) ?? Validators(),
            transformation: try Transformation(fields: fields),
            dimensions: try fields.object("dimensions", ImageSize.init(json:path:)))
        damage = try fields.string("damage")
        publication = try Publication(fields: fields)
        provenance = try fields.object("provenance", Provenance.init(json:path:))
    }

    /// Reads what `encode(to:)` writes, or an attachment object of the output.
    public init(from decoder: any Decoder) throws {
        self = try PushPayload.JSON.decode(decoder) { json, path in
            try FetchedMedia(fields: JSONFields(json, path: path))
        }
    }

    /// Writes every member: the output's, and what it leaves out (`directory`, `validators`, `dimensions`,
    /// `damage`, `publication_failed`, `provenance`); not the file's `identity`.
    public func encode(to encoder: any Encoder) throws {
        let (path, rest) = members(complete: true)
        try PushPayload.JSON.object(JSONObject(path + rest)).encode(to: encoder)
    }
}

extension FetchedMedia.Publication: Codable {
    var isPublished: Bool {
        if case .published = self { return true }
        return false
    }

    /// The member it adds to its media's object: `published_url`, or `publication_failed` with the reason.
    package var member: (key: String, value: PushPayload.JSON) {
        switch self {
        case .published(let url): return ("published_url", .text(url))
        case .failed(let reason): return ("publication_failed", .text(reason))
        }
    }

    /// The publication an object's members say, nil when neither member is there.
    package init?(fields: JSONFields) throws {
        if let url = try fields.string("published_url") {
            self = .published(url)
        } else if let reason = try fields.string("publication_failed") {
            self = .failed(reason)
        } else {
            return nil
        }
    }

    /// Reads `{"published_url": url}` or `{"publication_failed": reason}`.
    public init(from decoder: any Decoder) throws {
        self = try PushPayload.JSON.decodeMembers(
            decoder, missing: "neither published_url nor publication_failed", Self.init(fields:))
    }

    public func encode(to encoder: any Encoder) throws {
        try PushPayload.JSON.object(JSONObject([member])).encode(to: encoder)
    }
}
