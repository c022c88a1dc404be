import RichPushCore

/// One verifying decode the step asks for (`Enricher.Configuration.Transform.verifyImages`).
public struct VerificationRequest: Sendable, Hashable {
    /// The image's path.
    public var path: String
    /// Its type: JPEG, PNG or GIF.
    public var type: MediaType
    /// The bytes to decode instead of the file, when given: a PNG's picture chunks alone (`PNGChunks`), so that
    /// judging the picture inflates no text chunk (a zTXt bomb costs libpng 0.4 s of CPU for 97 KB).
    public var bytes: [UInt8]?

    public init(path: String, type: MediaType, bytes: [UInt8]? = nil) {
        self.path = path
        self.type = type
        self.bytes = bytes
    }
}
