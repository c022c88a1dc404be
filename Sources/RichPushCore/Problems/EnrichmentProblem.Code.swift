extension EnrichmentProblem {
    /// A stable machine code: the one vocabulary of everything RichPush reports, in JSON output, HTTP error bodies
    /// and metrics. A problem of a result, the problem of an `invalid` result (`PayloadError`), a
    /// `ConfigurationError` and an HTTP error each carry one; a code means one thing wherever it appears. Every code
    /// is listed in `known` and in docs/output.md's code table.
    ///
    /// Encodes as its text (`"bad-url"`); decodes any text, so that a client decodes a code a newer RichPush
    /// added.
    public struct Code: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
        /// The code's text, as written in JSON output.
        public let rawValue: String
        /// The code with this text; prefer the static members.
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public init(from decoder: any Decoder) throws {
            rawValue = try decoder.singleValueContainer().decode(String.self)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }

        /// Where a code is reported.
        public enum Domain: String, Sendable, Hashable, CaseIterable {
            /// A problem in a result's `problems`: about a reference, a field or an option of the payload.
            case problem
            /// The problem of an `invalid` result: the input is not a payload (`PayloadError`).
            case invalid
            /// A field of `Enricher.Configuration` (`ConfigurationError`).
            case configuration
            /// The body of an HTTP error response of `serve`, or of the worker's health and metrics routes.
            case http
        }

        /// Every code RichPush reports, each once, in docs/output.md's order.
        public static var known: [Code] { registry.map(\.code) }

        /// The codes reported where `domain` says, in docs/output.md's order.
        public static func known(in domain: Domain) -> [Code] {
            registry.filter { $0.domains.contains(domain) }.map(\.code)
        }

        /// Where this code is reported; empty for a code RichPush does not know (one decoded from elsewhere).
        public var domains: Set<Domain> { Set(Self.registry.first { $0.code == self }?.domains ?? []) }

        /// The codes that can reach a result's `problems`: the metric labels registered up front.
        public static var reported: [Code] {
            registry.filter { !$0.domains.isDisjoint(with: [.problem, .invalid]) }.map(\.code)
        }

        private static let registry: [(code: Code, domains: Set<Domain>)] = [
            (.notMutable, [.problem]), (.noAlert, [.problem]), (.badReference, [.problem]), (.onDevice, [.problem]),
            (.typeMismatch, [.problem]), (.badOption, [.problem]), (.tooManyReferences, [.problem]),
            (.tooManyProblems, [.problem]),
            (.badURL, [.problem]), (.blockedScheme, [.problem]), (.blockedAddress, [.problem]),
            (.blockedPort, [.problem]), (.unsupportedType, [.problem]), (.tooLarge, [.problem]),
            (.httpStatus, [.problem]), (.emptyBody, [.problem]), (.tooManyRedirects, [.problem]),
            (.timeout, [.problem]), (.expired, [.problem]), (.cancelled, [.problem]), (.tls, [.problem]),
            (.badResponse, [.problem]), (.network, [.problem]), (.storeFailed, [.problem]),
            (.tooManyPixels, [.problem]), (.animationDropped, [.problem]), (.damagedImage, [.problem]),
            (.damagedMedia, [.problem]), (.publishFailed, [.problem]), (.transformFailed, [.problem]),
            (.notJSON, [.invalid]), (.notObject, [.invalid]), (.tooDeep, [.invalid]),
            (.payloadTooLarge, [.invalid, .http]), (.invalidUTF8, [.invalid]),
            (.unreadable, [.invalid, .configuration]),
            (.noPayload, [.invalid]),
            (.outOfRange, [.configuration]), (.malformed, [.configuration]),
            (.badRequest, [.http]), (.badParameter, [.http, .invalid]), (.unauthorized, [.http]), (.notFound, [.http]),
            (.methodNotAllowed, [.http]), (.batchTooLarge, [.http]), (.targetTooLong, [.http]),
            (.headersTooLarge, [.http]), (.unsupportedTransferCoding, [.http]),
            (.expectationFailed, [.http]), (.tooManyInFlight, [.http]),
            (.draining, [.http]), (.tooManyConnections, [.http]), (.buffersFull, [.http]),
            (.tenantInFlight, [.http]), (.rateLimited, [.http]),
        ]

        // MARK: Problems of a result

        /// `aps.mutable-content` is not 1: on a phone the extension would never run. The media is still processed.
        public static let notMutable = Code(rawValue: "not-mutable")
        /// A payload for iOS that shows no alert (`preflight`): iOS runs the service extension only for a notification
        /// that does, so a silent, sound-only or badge-only push shows no media.
        public static let noAlert = Code(rawValue: "no-alert")
        /// A convention's field holds something other than a URL string.
        public static let badReference = Code(rawValue: "bad-reference")
        /// A vendor option is out of range or of the wrong type (a crop outside 0...1, a negative time); the
        /// attachment is still fetched, without that option.
        public static let badOption = Code(rawValue: "bad-option")
        /// The payload declares a type (CleverTap `ct_mediaType`) that the bytes are not; the bytes win and the
        /// media is attached as what it is.
        public static let typeMismatch = Code(rawValue: "type-mismatch")
        /// More references than the per-payload limit; the rest were not fetched.
        public static let tooManyReferences = Code(rawValue: "too-many-references")
        /// The media is one only the app on the device can resolve (a file in its bundle, a Home Assistant camera
        /// snapshot or lazy attachment): nothing was fetched, and the app's own extension attaches it.
        public static let onDevice = Code(rawValue: "on-device")
        /// The URL cannot be parsed, has a user or password, control characters, or is too long.
        public static let badURL = Code(rawValue: "bad-url")
        /// The port (of the URL, a redirect or a connection) is not allowed.
        public static let blockedPort = Code(rawValue: "blocked-port")
        /// The scheme (of the URL or of a redirect) is not allowed.
        public static let blockedScheme = Code(rawValue: "blocked-scheme")
        /// The address a connection would go to is refused by the address policy.
        public static let blockedAddress = Code(rawValue: "blocked-address")
        /// The bytes are not a type iOS attaches; the detail names what they are.
        public static let unsupportedType = Code(rawValue: "unsupported-type")
        /// The media's body is, or declares itself, larger than its kind's cap. (An input larger than the payload
        /// limit is `payloadTooLarge`.)
        public static let tooLarge = Code(rawValue: "too-large")
        /// The final response is not a 2xx (or is a 206 we never asked for).
        public static let httpStatus = Code(rawValue: "http-status")
        /// A 2xx response with no body.
        public static let emptyBody = Code(rawValue: "empty-body")
        /// The response breaks HTTP or a bound: headers over the limit, a body shorter than its declared length,
        /// a malformed reply.
        public static let badResponse = Code(rawValue: "bad-response")
        /// More redirects than allowed.
        public static let tooManyRedirects = Code(rawValue: "too-many-redirects")
        /// The connection could not be made in time, or the body arrived too slowly.
        public static let timeout = Code(rawValue: "timeout")
        /// The payload's deadline came before this transfer finished.
        public static let expired = Code(rawValue: "expired")
        /// The caller cancelled the work before the transfer finished.
        public static let cancelled = Code(rawValue: "cancelled")
        /// TLS failed: an untrusted or invalid certificate, or a handshake error.
        public static let tls = Code(rawValue: "tls")
        /// Name resolution, connection or transfer failed; the detail is curl's message.
        public static let network = Code(rawValue: "network")
        /// An image's header declares more pixels than allowed: refused before any pixel is decoded.
        public static let tooManyPixels = Code(rawValue: "too-many-pixels")
        /// The image could not be transformed; the detail is libvips's reason.
        public static let transformFailed = Code(rawValue: "transform-failed")
        /// An animation was attached as its first frame only: it could not be written as an animated GIF, or
        /// libvips reads only its first frame (an APNG that had to be resized).
        public static let animationDropped = Code(rawValue: "animation-dropped")
        /// The image does not decode whole (cut short, a broken data stream, a failed checksum). Refused when a
        /// phone would show nothing of it (a PNG); else attached, as far as it decodes, with this problem.
        public static let damagedImage = Code(rawValue: "damaged-image")
        /// The audio or video file is not whole to its container's structure (cut short, a box or chunk that is
        /// none, no frames, a format or media part missing). Refused when a phone would play nothing of it (an MP4
        /// without a whole `moov`, a WAV without its `fmt ` chunk, an MP3 that is mostly not frames); else attached,
        /// a player playing what is there, with this problem.
        public static let damagedMedia = Code(rawValue: "damaged-media")
        /// The code of damage to a file of `type`: `damagedImage` for an image, `damagedMedia` for audio or video.
        package static func damaged(_ type: MediaType) -> Code { type.kind == .image ? .damagedImage : .damagedMedia }
        /// The attachment could not be published (`--publish-dir`); it is attached, the content keeps its URL.
        public static let publishFailed = Code(rawValue: "publish-failed")
        /// The attachment could not be written (disk full, attachments directory gone or unusable).
        public static let storeFailed = Code(rawValue: "store-failed")
        /// The payload's fields had more problems than a result lists (`ConventionScan.maximumProblems`, 64): the
        /// first are listed, and this one, last, says how many more there were.
        public static let tooManyProblems = Code(rawValue: "too-many-problems")

        // MARK: Inputs that are not payloads (`PayloadError`)

        /// The input is not JSON text.
        public static let notJSON = Code(rawValue: "not-json")
        /// The input is JSON, but not an object.
        public static let notObject = Code(rawValue: "not-object")
        /// Arrays and objects nest deeper than the limit.
        public static let tooDeep = Code(rawValue: "too-deep")
        /// The input (a file, an NDJSON line, a worker entry, a request's JSON body: HTTP 413) is larger than the
        /// payload limit (not `too-large`, which is oversize media alone).
        public static let payloadTooLarge = Code(rawValue: "payload-too-large")
        /// The input is not valid UTF-8.
        public static let invalidUTF8 = Code(rawValue: "invalid-utf8")
        /// A file could not be read: an input (missing, a directory, a read error), or one a configuration field
        /// names.
        public static let unreadable = Code(rawValue: "unreadable")
        /// A queue entry has no payload (`richpush worker`: no `payload` field).
        public static let noPayload = Code(rawValue: "no-payload")

        // MARK: Configuration (`ConfigurationError`)

        /// A number or duration outside the field's range.
        public static let outOfRange = Code(rawValue: "out-of-range")
        /// Text not in the field's form (a `resolve` entry, a relative path, a control character).
        public static let malformed = Code(rawValue: "malformed")

        // MARK: HTTP error bodies (`serve`, the worker's health and metrics routes)

        /// 400: the request could be read two ways (a proxy in front could frame it otherwise): a NUL or control
        /// byte, a space in the target, a folded or repeated header, Content-Length with Transfer-Encoding.
        public static let badRequest = Code(rawValue: "bad-request")
        /// 400: a request parameter is not in its form (`?deadline=`, `X-Request-Id`).
        public static let badParameter = Code(rawValue: "bad-parameter")
        /// 401: the route needs the bearer token and the request does not bring it.
        public static let unauthorized = Code(rawValue: "unauthorized")
        /// 404: no such route, or no such attachment.
        public static let notFound = Code(rawValue: "not-found")
        /// 405: the route does not take this method (the `Allow` header says which it takes).
        public static let methodNotAllowed = Code(rawValue: "method-not-allowed")
        /// 413: an NDJSON body is larger than the batch limit (`--max-batch-bytes`).
        public static let batchTooLarge = Code(rawValue: "batch-too-large")
        /// 414: the request target is too long, or its query has too many arguments.
        public static let targetTooLong = Code(rawValue: "target-too-long")
        /// 431: the request line and headers are too large, or there are too many header fields.
        public static let headersTooLarge = Code(rawValue: "headers-too-large")
        /// 501: a transfer coding other than chunked.
        public static let unsupportedTransferCoding = Code(rawValue: "unsupported-transfer-coding")
        /// 417: an `Expect` other than `100-continue`, the one expectation defined.
        public static let expectationFailed = Code(rawValue: "expectation-failed")
        /// 503: as many requests as allowed are in process (`--max-in-flight`); retry after `Retry-After`.
        public static let tooManyInFlight = Code(rawValue: "too-many-in-flight")
        /// 503: the service is draining before it exits; retry elsewhere.
        public static let draining = Code(rawValue: "draining")
        /// 503: as many connections as allowed are open (`--max-connections`, `--max-connections-per-address`).
        public static let tooManyConnections = Code(rawValue: "too-many-connections")
        /// 503: request bodies being received fill the server's memory bound (`--max-buffered-bytes`).
        public static let buffersFull = Code(rawValue: "buffers-full")
        /// 429: as many of the tenant's requests as its `max_in_flight` allows are in process; retry after
        /// `Retry-After`.
        public static let tenantInFlight = Code(rawValue: "tenant-in-flight")
        /// 429: the tenant has sent more requests than its `rate` allows; retry after `Retry-After`.
        public static let rateLimited = Code(rawValue: "rate-limited")
    }
}
