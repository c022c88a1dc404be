/// A response's cache validators: its ETag and Last-Modified header values, as sent.
public struct Validators: Sendable, Hashable {
    /// The ETag header's value.
    public var etag: String?
    /// The Last-Modified header's value.
    public var lastModified: String?

    /// Validators.
    public init(etag: String? = nil, lastModified: String? = nil) {
        self.etag = etag
        self.lastModified = lastModified
    }

    /// The validators of a response, keeping only values that are safe to send back: an ETag of visible
    /// ASCII or obs-text bytes (no space, no control character: a bare CR or LF would inject a header into the
    /// revalidation request), a Last-Modified of printable ASCII, each at most 512 bytes. Others are dropped.
    package init(response etag: String?, lastModified: String?) {
        self.etag = etag.flatMap { Self.isSafe($0, allowingSpace: false) ? $0 : nil }
        self.lastModified = lastModified.flatMap { Self.isSafe($0, allowingSpace: true) ? $0 : nil }
    }

    private static func isSafe(_ value: String, allowingSpace: Bool) -> Bool {
        guard !value.isEmpty, value.utf8.count <= 512 else { return false }
        return value.utf8.allSatisfy { byte in
            if (0x21...0x7E).contains(byte) { return true }
            return allowingSpace ? byte == 0x20 : byte >= 0x80
        }
    }

    /// Whether there is anything to revalidate with.
    public var isEmpty: Bool { etag == nil && lastModified == nil }

    /// The conditional request headers these validators make.
    package var requestHeaders: [String] {
        (etag.map { ["If-None-Match: \($0)"] } ?? []) + (lastModified.map { ["If-Modified-Since: \($0)"] } ?? [])
    }
}

extension Validators: Codable {
    /// `etag` and `last_modified`, each when known.
    package var json: PushPayload.JSON {
        .object(
            JSONObject(
                (etag.map { [("etag", PushPayload.JSON.text($0))] } ?? [])
                    + (lastModified.map { [("last_modified", PushPayload.JSON.text($0))] } ?? [])))
    }

    package init(json: PushPayload.JSON, path: String) throws {
        let fields = try JSONFields(json, path: path)
        self.init(etag: try fields.string("etag"), lastModified: try fields.string("last_modified"))
    }

    public init(from decoder: any Decoder) throws { self = try PushPayload.JSON.decode(decoder, Self.init(json:path:)) }
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}
