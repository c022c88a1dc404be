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
    /// a broken block structure), or by a verifying decode (`Configuration.Transform.verifyImages`); nil otherwise.
    public var damage: String? = nil
    /// Where it was published (`Configuration.publisher`), or why it could not be; nil when nothing publishes.
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

/// A response's cache validators: its ETag and Last-Modified header values, as sent.
public struct Validators: Sendable, Hashable {
    /// The ETag header's value.
    public var etag: String?
    /// The Last-Modified header's value.
    public var lastModified: String?

    /// Validators.
    public init(etag: String? = nil, lastModified: String? = nil) {
        self.etag = etag
        self.lastModified = lastModified
    }

    /// The validators of a response, keeping only values that are safe to send back: an ETag of visible
    /// ASCII or obs-text bytes (no space, no control character: a bare CR or LF would inject a header into the
    /// revalidation request), a Last-Modified of printable ASCII, each at most 512 bytes. Others are dropped.
    init(response etag: String?, lastModified: String?) {
        self.etag = etag.flatMap { Self.isSafe($0, allowingSpace: false) ? $0 : nil }
        self.lastModified = lastModified.flatMap { Self.isSafe($0, allowingSpace: true) ? $0 : nil }
    }

    private static func isSafe(_ value: String, allowingSpace: Bool) -> Bool {
        guard !value.isEmpty, value.utf8.count <= 512 else { return false }
        return value.utf8.allSatisfy { byte in
            if (0x21...0x7E).contains(byte) { return true }
            return allowingSpace ? byte == 0x20 : byte >= 0x80
        }
    }

    /// Whether there is anything to revalidate with.
    public var isEmpty: Bool { etag == nil && lastModified == nil }

    /// The conditional request headers these validators make.
    var requestHeaders: [String] {
        (etag.map { ["If-None-Match: \($0)"] } ?? []) + (lastModified.map { ["If-Modified-Since: \($0)"] } ?? [])
    }
}

/// Why a fetch did not produce a file.
public struct FetchFailure: Error, Sendable, Hashable {
    /// The stable problem code.
    public var code: Problem.Code
    /// The specifics (curl's message, the refused address, the sniffed type).
    public var detail: String
    /// What the transport saw, for a caller that decides whether to fetch again (`RetryPolicy`); nil when
    /// nothing more than the code is known.
    public var cause: Cause?

    /// What the transport saw when a fetch failed.
    public enum Cause: Sendable, Hashable {
        /// Nothing accepted the connection (curl's CURLE_COULDNT_CONNECT, no policy refusal).
        case connectionRefused
        /// The connection broke before the response was complete: reset, or closed with no response at all
        /// (CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING).
        case connectionDropped
        /// No connection was made within the connect timeout.
        case connectTimeout
        /// The final response's status, with its Retry-After header value as sent, if any.
        case status(Int, retryAfter: String?)
    }

    /// A failure.
    public init(_ code: Problem.Code, _ detail: String, cause: Cause? = nil) {
        self.code = code
        self.detail = detail
        self.cause = cause
    }
}
