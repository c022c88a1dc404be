import RichPushCore

/// What an FCM message's Android reference becomes: what Firebase's Android code shows in a notification.
///
/// FCM's Android code (firebase-android-sdk, `ImageDownload.java`) refuses an image over 1 MiB
/// (`MAX_IMAGE_SIZE_BYTES = 1024 * 1024`), waits 5 s at most, and decodes the whole bitmap at full size; a GIF is
/// shown as its first frame. So the variant is a still JPEG (opaque) or PNG (with alpha) of at most 1,048,576
/// bytes whose longest side is at most `maximumDimension`. A source already within all of that is kept byte for
/// byte; video and audio are refused, since an Android notification shows neither.
package struct AndroidVariant: Sendable {
    /// FCM's Android limit on an image's bytes.
    package static let maximumBytes = 1_048_576

    /// The longest side a variant may have (`TransformSettings.androidMaximumDimension`).
    package var maximumDimension: Int

    package init(maximumDimension: Int) {
        self.maximumDimension = maximumDimension
    }

    /// What to do with `media` for Android.
    package enum Decision: Sendable, Hashable {
        /// The source is a variant already: attached as it is.
        case keep
        /// It needs a conversion, for these reasons (each a clause a person reads).
        case convert([String])
        /// Android shows nothing of it.
        case refuse(FetchFailure)
    }

    /// Why `type` (a video or a sound) is refused for Android.
    package static func noImage(_ type: MediaType) -> String {
        "\(type.mime): an Android notification shows neither video nor audio, only an image"
    }

    /// The decision for `media` (as fetched, after iOS's own transformation, if any), its file read as far as its
    /// metadata goes (`head(of:)`).
    package func decision(for media: FetchedMedia) -> Decision {
        decision(for: media, head: Self.head(of: media))
    }

    /// The decision for `media` whose file begins with `head` (the whole file, or a JPEG to its first scan: a JPEG
    /// or PNG is kept only when these bytes show it has no EXIF orientation to apply, no animation and no metadata).
    package func decision(for media: FetchedMedia, head: [UInt8]) -> Decision {
        decision(type: media.type, bytes: media.bytes, dimensions: media.dimensions, head: head, whole: true)
    }

    /// The decision for media of `type`, `bytes` long, of `dimensions` when known, whose file begins with `head`.
    /// `whole` says that `head` holds as much of the file as `head(of:)` reads, so what it does not show (the
    /// dimensions, the structure to the picture) is a reason to convert; `explain`, which has only a probe's first
    /// bytes, passes false, and is then told only what those bytes do show.
    package func decision(
        type: MediaType, bytes: Int, dimensions: ImageSize?, head: [UInt8], whole: Bool
    ) -> Decision {
        switch type.kind {
        case .video, .audio:
            return .refuse(FetchFailure(.unsupportedType, Self.noImage(type)))
        case .image: break
        }
        var reasons: [String] = []
        if type == .gif {
            reasons.append("a GIF (Android shows its first frame; the variant is that frame)")
        } else if type != .jpeg && type != .png {
            reasons.append("\(type.mime), not JPEG or PNG")
        }
        if bytes > Self.maximumBytes {
            reasons.append("\(bytes) bytes, over FCM's Android limit of \(Self.maximumBytes)")
        }
        if let size = dimensions {
            let side = max(size.width, size.height)
            if side > maximumDimension {
                reasons.append("\(size.width) x \(size.height) pixels, longer than \(maximumDimension) on a side")
            }
        } else if reasons.isEmpty, whole {
            reasons.append("its dimensions are not known from its header")
        }
        if let metadata = ImageMetadata.read(head, type: type) {
            reasons += Self.reasons(metadata, complete: metadata.complete || !whole)
        } else if reasons.isEmpty, whole {
            reasons.append("its metadata could not be read")
        }
        return reasons.isEmpty ? .keep : .convert(reasons)
    }

    /// Why a JPEG or PNG with `metadata` is not shown as it should be on Android, or holds what a variant drops.
    /// `complete` false adds that its structure could not be read to the picture.
    private static func reasons(_ metadata: ImageMetadata, complete: Bool) -> [String] {
        var reasons: [String] = []
        if metadata.animated {
            reasons.append("an animated PNG (Android shows its first frame; the variant is that frame)")
        }
        if let orientation = metadata.orientation, orientation != 1 {
            reasons.append(
                "EXIF orientation \(orientation) (Android's BitmapFactory ignores it: the picture would show turned; "
                    + "the variant is upright)")
        }
        if !metadata.kinds.isEmpty {
            reasons.append("metadata (\(metadata.kinds.joined(separator: ", "))), which the variant strips")
        }
        if !complete {
            reasons.append("its structure could not be read to the picture")
        }
        return reasons
    }

    /// The bytes of `media`'s file that `decision(for:head:)` reads, once per payload: a JPEG's first 64 KiB (its
    /// metadata comes before its first scan: one whose scan does not start within them is converted, or filtered
    /// from the whole file), all of a PNG (text chunks may follow the image data); none of a larger one (converted
    /// whatever it holds) or of any other type.
    static func head(of media: FetchedMedia) -> [UInt8] {
        guard media.type == .jpeg || media.type == .png, media.bytes <= maximumBytes else { return [] }
        let limit = media.type == .jpeg ? jpegHead : maximumBytes
        var buffer = FileSystem.readBuffer(count: jpegHead)
        var head: [UInt8] = []
        head.reserveCapacity(min(limit, media.bytes))
        _ = FileSystem.readChunks(media.path, buffer: &buffer) { chunk in
            head += chunk.prefix(limit - head.count)
            return head.count < limit
        }
        return head
    }

    /// How much of a JPEG the decision reads: 64 KiB, a segment's largest (an EXIF block is one segment).
    static let jpegHead = 65_536

    /// Why a variant is refused when no converter is configured, with the reasons it needed one: `too-large` when
    /// it is over FCM's limit or the bound, else `unsupported-type` (its type or form is not what Android shows).
    package func refusal(_ media: FetchedMedia, reasons: [String]) -> FetchFailure {
        refusal(bytes: media.bytes, dimensions: media.dimensions, reasons: reasons)
    }

    /// `refusal(_:reasons:)` for media `bytes` long, of `dimensions` when known.
    package func refusal(bytes: Int, dimensions: ImageSize?, reasons: [String]) -> FetchFailure {
        let side = dimensions.map { max($0.width, $0.height) } ?? 0
        let large = bytes > Self.maximumBytes || side > maximumDimension
        return FetchFailure(
            large ? .tooLarge : .unsupportedType,
            "for Android: \(reasons.joined(separator: "; ")); making an Android variant needs a converter "
                + "(transform.converter: the CLI's is libvips unless --no-transform)")
    }
}
