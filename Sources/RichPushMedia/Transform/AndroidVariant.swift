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

    /// The decision for `media` (as fetched, after iOS's own transformation, if any).
    package func decision(for media: FetchedMedia) -> Decision {
        switch media.type.kind {
        case .video, .audio:
            return .refuse(FetchFailure(.unsupportedType, Self.noImage(media.type)))
        case .image: break
        }
        var reasons: [String] = []
        if media.type == .gif {
            reasons.append("a GIF (Android shows its first frame; the variant is that frame)")
        } else if media.type != .jpeg && media.type != .png {
            reasons.append("\(media.type.mime), not JPEG or PNG")
        }
        if media.bytes > Self.maximumBytes {
            reasons.append("\(media.bytes) bytes, over FCM's Android limit of \(Self.maximumBytes)")
        }
        if let size = media.dimensions {
            let side = max(size.width, size.height)
            if side > maximumDimension {
                reasons.append("\(size.width) x \(size.height) pixels, longer than \(maximumDimension) on a side")
            }
        } else if reasons.isEmpty {
            reasons.append("its dimensions are not known from its header")
        }
        return reasons.isEmpty ? .keep : .convert(reasons)
    }
}
