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
    /// the bytes are: the file is read only by that type's decoder, never by one a library guesses, and the
    /// header says so (`decoder` is `type`; another is refused).
    /// - Throws: `transform-failed` when it cannot be read, or that decoder does not recognise it.
    func header(of path: String, type: MediaType) throws(TransformFailure) -> ImageHeader

    /// Decodes `request.input` (with the decoder of `request.type` only), turns it upright by its orientation, shrinks
    /// it to fit `request.maximumSide` (never enlarging), and writes it with `request.output` as `request.format`
    /// without any metadata. Returns the size written. Must return soon after `stop` is signalled, throwing.
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
