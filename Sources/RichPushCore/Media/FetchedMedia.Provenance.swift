extension FetchedMedia {
    /// Where a fetch went and what its origin said the bytes were: the redirects followed, and the final response's
    /// Content-Type as sent. The type the bytes are is `FetchedMedia.type`, decided from the bytes alone; set side
    /// by side, the two show an origin that mislabels its media (a JPEG sent as `text/plain`).
    public struct Provenance: Sendable, Hashable {
        /// The most bytes of a Content-Type kept. A media type with its parameters fits in far less
        /// (`image/jpeg; charset=binary` is 26); the bound keeps what an origin sends from growing the record.
        public static let maximumContentTypeBytes = 256

        /// Each redirect's target, in the order followed, as the next request was made to it (the URL asked for is
        /// not among them): at most `NetworkSettings.maximumRedirects`, each within the URL length limit.
        public var redirects: [String]
        /// The final response's Content-Type as the origin sent it, trimmed; nil when it sent none.
        public var contentType: String?

        /// A provenance.
        public init(redirects: [String] = [], contentType: String? = nil) {
            self.redirects = redirects
            self.contentType = contentType
        }

        /// A Content-Type header's value (already trimmed) as it is kept: its first `maximumContentTypeBytes`
        /// bytes, cut at a whole character, a control character or a byte that is not UTF-8 made U+FFFD (so that
        /// printing it cannot steer a terminal); nil when empty.
        ///
        /// Of a concrete type: generic over `Collection`, it ran unspecialized from the fetch module (a `package`
        /// function is not specialized across modules), and each call looked up the collection's associated types
        /// by their mangled names, about 30 `malloc`s a header on the fetch loop's thread (a `perf` probe on
        /// `malloc`, bench (a): 30 of the 188 a payload).
        package static func contentType(sent value: UnsafeRawBufferPointer) -> String? {
            guard !value.isEmpty else { return nil }
            // Visible ASCII, spaces and tabs: every real Content-Type, kept as is.
            if value.count <= maximumContentTypeBytes,
                value.allSatisfy({ (0x20...0x7E).contains($0) || $0 == 0x09 })
            {
                return String(decoding: value, as: UTF8.self)
            }
            var kept = String.UnicodeScalarView()
            var bytes = 0
            var decoder = UTF8()
            var input = value.makeIterator()
            while true {
                let scalar: Unicode.Scalar
                switch decoder.decode(&input) {
                case .scalarValue(let decoded):
                    let isControl = (decoded.value < 0x20 && decoded != "\t") || (0x7F...0x9F).contains(decoded.value)
                    scalar = isControl ? "\u{FFFD}" : decoded
                case .error: scalar = "\u{FFFD}"
                case .emptyInput: return String(kept)
                }
                bytes += UTF8.width(scalar)
                guard bytes <= maximumContentTypeBytes else { return String(kept) }
                kept.append(scalar)
            }
        }
    }
}

extension FetchedMedia.Provenance: Codable {
    /// `redirects` (an array, empty when none were followed), then `content_type` when one was sent.
    package var json: PushPayload.JSON {
        .object(
            JSONObject(
                [("redirects", PushPayload.JSON.array(redirects.map { .text($0) }))]
                    + (contentType.map { [("content_type", PushPayload.JSON.text($0))] } ?? [])))
    }

    package init(json: PushPayload.JSON, path: String) throws {
        let fields = try JSONFields(json, path: path)
        self.init(
            redirects: try fields.required(fields.elements("redirects", Self.url), "redirects"),
            contentType: try fields.string("content_type"))
    }

    private static func url(_ json: PushPayload.JSON, _ path: String) throws -> String {
        guard let text = json.stringValue else { throw JSONFields.error(path, "not a URL: \(json.kindDescription)") }
        return text
    }

    public init(from decoder: any Decoder) throws { self = try PushPayload.JSON.decode(decoder, Self.init(json:path:)) }
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}
