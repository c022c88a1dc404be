/// The media types iOS attaches to a notification, with the Apple UTI and file extension each is stored under.
public struct MediaType: Sendable, Hashable, CustomStringConvertible {
    /// The broad kind, which sets the byte cap.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case image, audio, video
    }

    /// Apple's uniform type identifier (`public.jpeg`).
    public let uti: String
    /// The MIME type we report (`image/jpeg`).
    public let mime: String
    /// The file extension we store under, without the dot (`jpg`).
    public let fileExtension: String
    /// Image, audio or video.
    public let kind: Kind

    public var description: String { uti }

    public static let jpeg = MediaType(uti: "public.jpeg", mime: "image/jpeg", fileExtension: "jpg", kind: .image)
    public static let gif = MediaType(uti: "com.compuserve.gif", mime: "image/gif", fileExtension: "gif", kind: .image)
    public static let png = MediaType(uti: "public.png", mime: "image/png", fileExtension: "png", kind: .image)
    public static let mp3 = MediaType(uti: "public.mp3", mime: "audio/mpeg", fileExtension: "mp3", kind: .audio)
    public static let aiff = MediaType(
        uti: "public.aiff-audio", mime: "audio/aiff", fileExtension: "aiff", kind: .audio)
    public static let wav = MediaType(
        uti: "com.microsoft.waveform-audio", mime: "audio/wav", fileExtension: "wav", kind: .audio)
    public static let m4a = MediaType(
        uti: "public.mpeg-4-audio", mime: "audio/mp4", fileExtension: "m4a", kind: .audio)
    public static let mpeg = MediaType(uti: "public.mpeg", mime: "video/mpeg", fileExtension: "mpg", kind: .video)
    public static let mpeg2 = MediaType(
        uti: "public.mpeg-2-video", mime: "video/mpeg", fileExtension: "mpg", kind: .video)
    public static let mp4 = MediaType(uti: "public.mpeg-4", mime: "video/mp4", fileExtension: "mp4", kind: .video)
    public static let avi = MediaType(uti: "public.avi", mime: "video/x-msvideo", fileExtension: "avi", kind: .video)

    /// Whether a vendor's declared type agrees with this one: a kind (`image`), an extension (`jpg`, `.jpeg`),
    /// a MIME type (`image/jpeg`) or a UTI (`public.jpeg`), case-insensitive. Nil when the hint names nothing
    /// we know, so that no judgement is made.
    public func matches(hint: String) -> Bool? {
        var text = hint.lowercased()
        if text.hasPrefix(".") { text.removeFirst() }
        if let kind = Kind(rawValue: text) { return kind == self.kind }
        let aliases: [String: [MediaType]] = [
            "jpg": [.jpeg], "jpeg": [.jpeg], "gif": [.gif], "png": [.png], "mp3": [.mp3], "aif": [.aiff],
            "aiff": [.aiff], "wav": [.wav], "m4a": [.m4a], "mpg": [.mpeg, .mpeg2], "mpeg": [.mpeg, .mpeg2],
            "mp4": [.mp4], "m4v": [.mp4], "avi": [.avi],
            // Home Assistant's names.
            "mpeg2": [.mpeg2], "mpeg4": [.mp4], "mpeg4audio": [.m4a], "waveformaudio": [.wav],
        ]
        if let types = aliases[text] { return types.contains(self) }
        if let type = Self.all.first(where: { $0.uti == text }) { return type == self }
        let mimes = Self.all.filter { $0.mime == text }
        if !mimes.isEmpty { return mimes.contains(self) }
        // Another media MIME type (image/webp for a JPEG): a disagreement. Anything else: no judgement.
        if text.hasPrefix("image/") || text.hasPrefix("audio/") || text.hasPrefix("video/") { return false }
        return nil
    }

    /// Every supported type.
    public static let all: [MediaType] = [.jpeg, .gif, .png, .mp3, .aiff, .wav, .m4a, .mpeg, .mpeg2, .mp4, .avi]

    // Images iOS does not attach, which the transformation step turns into ones it does
    // (`Enricher.Configuration.Transform`).
    public static let webp = MediaType(
        uti: "org.webmproject.webp", mime: "image/webp", fileExtension: "webp", kind: .image)
    public static let heic = MediaType(uti: "public.heic", mime: "image/heic", fileExtension: "heic", kind: .image)
    public static let avif = MediaType(uti: "public.avif", mime: "image/avif", fileExtension: "avif", kind: .image)
    public static let svg = MediaType(
        uti: "public.svg-image", mime: "image/svg+xml", fileExtension: "svg", kind: .image)
    public static let tiff = MediaType(uti: "public.tiff", mime: "image/tiff", fileExtension: "tiff", kind: .image)
    public static let bmp = MediaType(uti: "com.microsoft.bmp", mime: "image/bmp", fileExtension: "bmp", kind: .image)

    /// The images iOS does not attach that can be transcoded into ones it does.
    public static let convertible: [MediaType] = [.webp, .heic, .avif, .svg, .tiff, .bmp]

    /// Whether iOS attaches this type (one of `all`).
    public var isAttachable: Bool { Self.all.contains(self) }
}

extension MediaType: Codable {
    /// The type with this UTI, among those RichPush attaches or transcodes; nil for another.
    package init?(uti: String) {
        guard let type = (Self.all + Self.convertible).first(where: { $0.uti == uti }) else { return nil }
        self = type
    }

    /// Reads a UTI (`"public.jpeg"`) of a type RichPush knows.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let uti = try container.decode(String.self)
        guard let type = MediaType(uti: uti) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "'\(uti)' is not a type RichPush knows")
        }
        self = type
    }

    /// Writes the UTI.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(uti)
    }

    /// The type of an object's `type` member (a UTI), checked against its `mime` member when there is one.
    package init(fields: JSONFields) throws {
        let uti = try fields.required(fields.string("type"), "type")
        guard let type = MediaType(uti: uti) else {
            throw JSONFields.error(fields.path, "'\(uti)' is not a type RichPush knows")
        }
        if let mime = try fields.string("mime"), mime != type.mime {
            throw JSONFields.error(fields.path, "mime '\(mime)' is not \(uti)'s \(type.mime)")
        }
        self = type
    }
}
