import RichPushStore

/// Where a conversion writes its image: a new attachment's file, empty when the conversion starts. The step owns
/// the file (it commits it, or removes it when the conversion throws or is stopped); a converter only appends to
/// it, in order, with `write`, on the thread `convert` was called on (it is not `Sendable`, as the file is not).
public struct ImageOutput {
    /// The open file, for a converter of this package that hands it to a C library writing by descriptor
    /// (`VipsConverter`, which truncates it itself before a failed call is made again).
    package let fileDescriptor: Int32
    private let append: (UnsafeRawBufferPointer) throws(TransformFailure) -> Void

    /// An output onto `fileDescriptor` whose writes go to `append`.
    package init(
        fileDescriptor: Int32, append: @escaping (UnsafeRawBufferPointer) throws(TransformFailure) -> Void
    ) {
        self.fileDescriptor = fileDescriptor
        self.append = append
    }

    /// The output into a partial attachment file.
    package init(_ partial: PartialAttachment) {
        self.init(fileDescriptor: partial.fileDescriptor) { bytes throws(TransformFailure) in
            do throws(StoreError) {
                try partial.write(bytes)
            } catch {
                throw TransformFailure(.storeFailed, error.detail)
            }
        }
    }

    /// Appends `bytes` to the image.
    /// - Throws: `store-failed` with the system's reason (a full disk).
    public func write(_ bytes: UnsafeRawBufferPointer) throws(TransformFailure) {
        try append(bytes)
    }

    /// Appends `bytes` to the image.
    /// - Throws: `store-failed` with the system's reason (a full disk).
    public func write(_ bytes: [UInt8]) throws(TransformFailure) {
        // withUnsafeBytes rethrows untyped: the typed error rides out in a Result.
        try bytes.withUnsafeBytes { buffer in Result { () throws(TransformFailure) in try append(buffer) } }.get()
    }
}

@available(*, unavailable)
extension ImageOutput: Sendable {}
