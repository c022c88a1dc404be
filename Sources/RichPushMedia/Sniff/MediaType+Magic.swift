import RichPushCore

/// The media types by the names libmagic gives them: the sniffer's reading of its verdicts.
extension MediaType {
    /// The convertible image for a libmagic MIME type, or nil.
    static func convertibleFromMagic(mime: String) -> MediaType? {
        switch mime {
        case "image/webp": return .webp
        case "image/heic", "image/heif", "image/heic-sequence", "image/heif-sequence": return .heic
        case "image/avif": return .avif
        case "image/svg+xml", "image/svg": return .svg
        case "image/tiff": return .tiff
        case "image/bmp", "image/x-ms-bmp": return .bmp
        default: return nil
        }
    }

    /// The supported type for a libmagic MIME type and description, or nil when iOS does not attach it.
    ///
    /// libmagic names one MIME type for MPEG-1 and MPEG-2 program streams (`video/mpeg`); its description
    /// ("MPEG sequence, v2") tells them apart.
    static func fromMagic(mime: String, description: String) -> MediaType? {
        switch mime {
        case "image/jpeg": return .jpeg
        case "image/gif": return .gif
        case "image/png": return .png
        case "audio/mpeg": return .mp3
        case "audio/x-aiff", "audio/aiff": return .aiff
        case "audio/x-wav", "audio/wav", "audio/vnd.wave": return .wav
        case "audio/x-m4a", "audio/mp4": return .m4a
        case "video/mpeg": return description.contains("v2") ? .mpeg2 : .mpeg
        case "video/mp4": return .mp4
        case "video/x-msvideo", "video/avi": return .avi
        default: return nil
        }
    }
}
