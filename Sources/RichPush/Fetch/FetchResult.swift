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
}

/// Why a fetch did not produce a file.
public struct FetchFailure: Error, Sendable, Hashable {
    /// The stable problem code.
    public var code: Problem.Code
    /// The specifics (curl's message, the refused address, the sniffed type).
    public var detail: String

    /// A failure.
    public init(_ code: Problem.Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }
}
