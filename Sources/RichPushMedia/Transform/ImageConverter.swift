import RichPushCore

/// Decodes and encodes images for the transformation step: the blocking work, which the step runs on threads of
/// its own, never on the fetch loop or the cooperative pool. `RichPushTransform.VipsConverter` is the libvips one;
/// it lives outside this library so that a process that transforms nothing never loads an image library.
public protocol ImageConverter: Sendable {
    /// Readies the converter (loads its library) ahead of the first image, which otherwise pays for it. Opening
    /// libvips holds the dynamic loader's lock for 50 to 500 ms, during which no thread of the process can be
    /// created (measured): a program that wants no such pause mid-flight calls this before taking work, at the
    /// price of libvips's memory (23 MiB) whether or not an image ever needs it. Default: nothing.
    func prepare()

    /// What the header of the image at `path` says, read without decoding a pixel. `type` is what libmagic decided
    /// the bytes are: the file is read only by that type's decoder, never by one a library guesses.
    /// - Throws: `transform-failed` when it cannot be read, or that decoder does not recognise it.
    func header(of path: String, type: MediaType) throws(TransformFailure) -> ImageHeader

    /// Decodes `request.input` (with the decoder of `request.type` only), turns it upright by its orientation, shrinks it to fit `request.maximumSide`
    /// (never enlarging), and writes it to `request.output` (an open, empty file) as `request.format` without
    /// any metadata. Returns the size written. Must return soon after `stop` is signalled, throwing.
    /// - Throws: `transform-failed` with the library's reason.
    func convert(_ request: ConversionRequest, stop: StopSignal) throws(TransformFailure) -> ImageSize

    /// Decodes every pixel of `request`'s image (every frame of a GIF) as a phone would, and writes nothing:
    /// whether the image decodes whole. Must return soon after `stop` is signalled, throwing.
    /// - Throws: `damaged-image` with the decoder's reason when it does not decode whole (cut short, a broken
    ///   data stream); `transform-failed` when it cannot be checked.
    func verify(_ request: VerificationRequest, stop: StopSignal) throws(TransformFailure)
}

extension ImageConverter {
    public func prepare() {}
}

/// What an image's header says.
public struct ImageHeader: Sendable, Hashable {
    /// The width of one frame.
    public var width: Int
    /// The height of one frame.
    public var height: Int
    /// Frames of an animation, else 1.
    public var pages: Int
    /// Whether it has an alpha channel.
    public var hasAlpha: Bool
    /// The decoder that reads it (libvips's loader: `jpegload`, `webpload`, `svgload`...).
    public var loader: String

    public init(width: Int, height: Int, pages: Int, hasAlpha: Bool, loader: String) {
        self.width = width
        self.height = height
        self.pages = pages
        self.hasAlpha = hasAlpha
        self.loader = loader
    }

    /// What the first bytes of a still JPEG or PNG say (`ImageDimensions`): its size, one frame, no decoder named.
    init(size: ImageSize) {
        self.init(width: size.width, height: size.height, pages: 1, hasAlpha: false, loader: "")
    }

    /// Pixels in all frames, saturating.
    public var pixels: Int {
        let (area, overflow) = width.multipliedReportingOverflow(by: height)
        let (all, overflowAgain) = area.multipliedReportingOverflow(by: max(pages, 1))
        return overflow || overflowAgain ? Int.max : all
    }

    /// The longest side.
    public var longestSide: Int { max(width, height) }
}

/// One conversion the step asks for.
public struct ConversionRequest: Sendable, Hashable {
    /// The image's path.
    public var input: String
    /// What libmagic decided its bytes are: the only decoder it is read with.
    public var type: MediaType
    /// An open, empty file to write into; the step owns it (the converter neither closes nor renames it).
    public var output: Int32
    /// The type to write: JPEG, PNG or GIF (for an animation).
    public var format: MediaType
    /// The longest side of the output (aspect kept, never enlarged); nil keeps the size.
    public var maximumSide: Int?
    /// JPEG quality, 1 to 100.
    public var quality: Int
    /// Whether every frame is read (an animation written as GIF), rather than the first.
    public var animated: Bool

    public init(
        input: String, type: MediaType, output: Int32, format: MediaType, maximumSide: Int?, quality: Int, animated: Bool
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

/// One verifying decode the step asks for (`Configuration.Transform.verifyImages`).
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

/// Tells a conversion to stop (its payload's deadline came, or the engine is shutting down). The converter
/// registers what stops its computation while one runs; a signal before or during the registration still stops it.
public final class StopSignal: Sendable {
    private struct State {
        var stopped = false
        var action: (@Sendable () -> Void)?
    }

    private let state = LockedValue(State())

    public init() {}

    /// Whether `stop()` was called.
    public var isStopped: Bool { state.withLock { $0.stopped } }

    /// Runs `action` when `stop()` is called while `body` runs (at once if it was called before); `action` may run
    /// on another thread, concurrently with `body`, and never after `whileRegistered` returns.
    public func whileRegistered<Result>(
        _ action: @escaping @Sendable () -> Void, _ body: () throws(TransformFailure) -> Result
    ) throws(TransformFailure) -> Result {
        let stopped = state.withLock { state in
            state.action = action
            return state.stopped
        }
        if stopped { action() }
        defer { state.withLock { $0.action = nil } }
        return try body()
    }

    /// Stops the conversion under way, if any, and any later one.
    public func stop() {
        // The action runs under the lock, so that `whileRegistered` cannot return (and its converter free what
        // the action touches) while it runs.
        state.withLock { state in
            state.stopped = true
            state.action?()
        }
    }
}

/// Why an image could not be transformed; `code` is `too-many-pixels`, `damaged-image`, `transform-failed` or
/// `expired`.
public struct TransformFailure: Error, Sendable, Hashable {
    public var code: Problem.Code
    public var detail: String

    public init(_ code: Problem.Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }
}
