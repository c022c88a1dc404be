import RichPushCore

/// One conversion the step asks for, on the thread it calls `convert` on (its output is not `Sendable`).
public struct ConversionRequest {
    /// The image's path.
    public var input: String
    /// What libmagic decided its bytes are: the only decoder it is read with.
    public var type: MediaType
    /// Where to write the image (empty at the start); the step owns the file behind it.
    public var output: ImageOutput
    /// The type to write: JPEG, PNG or GIF (for an animation).
    public var format: MediaType
    /// The longest side of the output (aspect kept, never enlarged); nil keeps the size.
    public var maximumSide: Int?
    /// JPEG quality, 1 to 100.
    public var quality: Int
    /// Whether every frame is read (an animation written as GIF), rather than the first.
    public var animated: Bool

    public init(
        input: String, type: MediaType, output: ImageOutput, format: MediaType, maximumSide: Int?, quality: Int,
        animated: Bool
    ) {
        self.input = input
        self.type = type
        self.output = output
        self.format = format
        self.maximumSide = maximumSide
        self.quality = quality
        self.animated = animated
    }
}
