/// Something that kept a reference from being attached, or that a user needs to hear about a payload.
///
/// `code` is stable (it goes into JSON output and metrics); `detail` carries the specifics.
public struct EnrichmentProblem: Sendable, Hashable, CustomStringConvertible {
    /// A stable machine code; every code is listed in the README.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// The code's text, as written in JSON output.
        public let rawValue: String
        /// A code; prefer the static members.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// `aps.mutable-content` is not 1: on a phone the extension would never run. The media is still processed.
        public static let notMutable = Code("not-mutable")
        /// A convention's field holds something other than a URL string.
        public static let badReference = Code("bad-reference")
        /// A vendor option is out of range or of the wrong type (a crop outside 0...1, a negative time); the
        /// attachment is still fetched, without that option.
        public static let badOption = Code("bad-option")
        /// The payload declares a type (CleverTap `ct_mediaType`) that the bytes are not; the bytes win and the
        /// media is attached as what it is.
        public static let typeMismatch = Code("type-mismatch")
        /// More references than the per-payload limit; the rest were not fetched.
        public static let tooManyReferences = Code("too-many-references")
        /// The media is one only the app on the device can resolve (a file in its bundle, a Home Assistant camera
        /// snapshot or lazy attachment): nothing was fetched, and the app's own extension attaches it.
        public static let onDevice = Code("on-device")
        /// The URL cannot be parsed, has a user or password, control characters, or is too long.
        public static let badURL = Code("bad-url")
        /// The port (of the URL, a redirect or a connection) is not allowed.
        public static let blockedPort = Code("blocked-port")
        /// The scheme (of the URL or of a redirect) is not allowed.
        public static let blockedScheme = Code("blocked-scheme")
        /// The address a connection would go to is refused by the address policy.
        public static let blockedAddress = Code("blocked-address")
        /// The bytes are not a type iOS attaches; the detail names what they are.
        public static let unsupportedType = Code("unsupported-type")
        /// The body is, or declares itself, larger than its kind's cap.
        public static let tooLarge = Code("too-large")
        /// The final response is not a 2xx (or is a 206 we never asked for).
        public static let httpStatus = Code("http-status")
        /// A 2xx response with no body.
        public static let emptyBody = Code("empty-body")
        /// The response breaks HTTP or a bound: headers over the limit, a body shorter than its declared length,
        /// a malformed reply.
        public static let badResponse = Code("bad-response")
        /// More redirects than allowed.
        public static let tooManyRedirects = Code("too-many-redirects")
        /// The connection could not be made in time, or the body arrived too slowly.
        public static let timeout = Code("timeout")
        /// The payload's deadline came before this transfer finished.
        public static let expired = Code("expired")
        /// The caller cancelled the work before the transfer finished.
        public static let cancelled = Code("cancelled")
        /// TLS failed: an untrusted or invalid certificate, or a handshake error.
        public static let tls = Code("tls")
        /// Name resolution, connection or transfer failed; the detail is curl's message.
        public static let network = Code("network")
        /// An image's header declares more pixels than allowed: refused before any pixel is decoded.
        public static let tooManyPixels = Code("too-many-pixels")
        /// The image could not be transformed; the detail is libvips's reason.
        public static let transformFailed = Code("transform-failed")
        /// An animation was attached as its first frame only: it could not be written as an animated GIF, or
        /// libvips reads only its first frame (an APNG that had to be resized).
        public static let animationDropped = Code("animation-dropped")
        /// The image does not decode whole (cut short, a broken data stream, a failed checksum). Refused when a
        /// phone would show nothing of it (a PNG); else attached, as far as it decodes, with this problem.
        public static let damagedImage = Code("damaged-image")
        /// The attachment could not be published (`--publish-dir`); it is attached, the content keeps its URL.
        public static let publishFailed = Code("publish-failed")
        /// The attachment could not be written (disk full, attachments directory gone or unusable).
        public static let storeFailed = Code("store-failed")
    }

    /// The URL or field the problem is about.
    public var source: String
    /// The stable code.
    public var code: Code
    /// The specifics, for a human.
    public var detail: String
    /// For a reference that was fetched, how many fetches were made (see `RetryPolicy`); nil for a problem of
    /// the payload itself (a field, an option).
    public var attempts: Int?

    /// A problem.
    public init(source: String, code: Code, detail: String, attempts: Int? = nil) {
        self.source = source
        self.code = code
        self.detail = detail
        self.attempts = attempts
    }

    public var description: String { "\(code) (\(source)): \(detail)" }
}
