internal import CCurl
import RichPushCore
import RichPushFetch
import RichPushMedia

/// A response of the store: its status, its `Content-Length` (a `HEAD`'s length of the object) and the start of its
/// body (an error document).
struct StoreResponse {
    let status: Int
    /// -1 when the response had none.
    let contentLength: Int64
    let body: [UInt8]
}

/// Why a request to the store failed: the store's error code (from its XML error document, else from the status) or
/// `network`, `tls`, `expired`, `cancelled`, `unreadable`; and whether trying again may succeed.
struct StoreError: Error {
    let code: String
    let detail: String
    var retryable = false

    init(code: String, detail: String, retryable: Bool = false) {
        self.code = code
        self.detail = detail
        self.retryable = retryable
    }

    /// The store answered `response` with an error: its `<Code>` and `<Message>`, or the status alone.
    init(response: StoreResponse, method: String, url: String) {
        let document = String(decoding: response.body, as: UTF8.self)
        let given = Self.element("Code", in: document)
        let message = Self.element("Message", in: document)
        // The code becomes a metric's label and a word in every message: only one that looks like S3's (letters,
        // digits, `.`, `_`, `-`; 64 at most) is taken; another is quoted in the detail, its status's code used.
        let accepted = given.flatMap { Self.isCode($0) ? $0 : nil }
        self.code = accepted ?? Self.code(forStatus: response.status)
        let odd =
            accepted == nil ? given.map { " (its code, not one: \(TerminalText.withoutControls($0)))" } ?? "" : ""
        let said = message.map { ": " + TerminalText.withoutControls($0) } ?? ""
        detail = "the store answered \(self.code)\(odd) (HTTP \(response.status) to \(method) \(url))\(said)"
        retryable =
            [500, 502, 503, 504, 429].contains(response.status)
            || ["SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable"].contains(self.code)
            // AWS: two conditional writes of one key at once; the one answered 409 is to be tried again.
            || self.code == "ConditionalRequestConflict"
    }

    /// curl failed with `curl` (`message` is its error buffer): `expired` when the deadline ended it, `cancelled`
    /// when it was stopped, `tls` when the store's certificate is not trusted or the handshake failed, else `network`
    /// (retryable for a refused, reset or dropped connection).
    init(curl: CURLcode, message: String, url: String, stop: StopFlag) {
        switch CurlTLSFailure(code: curl.rawValue, message: message) {
        case .refused?:
            // Not retried: a certificate not trusted now is not trusted a moment later.
            self.init(code: "tls", detail: "the store's TLS failed at \(url): \(message)")
            return
        case .dropped?:
            self.init(code: "network", detail: "cannot reach the store at \(url): \(message)", retryable: true)
            return
        case nil:
            break
        }
        switch curl {
        case CURLE_ABORTED_BY_CALLBACK where stop.isSet:
            self.init(code: "cancelled", detail: "the upload to \(url) was stopped")
        case CURLE_OPERATION_TIMEDOUT:
            self.init(code: "expired", detail: "the deadline came before the store answered (\(url): \(message))")
        default:
            let transient: [CURLcode] = [
                CURLE_COULDNT_CONNECT, CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE,
            ]
            self.init(
                code: "network", detail: "cannot reach the store at \(url): \(message)",
                retryable: transient.contains(curl))
        }
    }

    var publishFailure: PublishFailure { PublishFailure(detail, code: code) }

    /// The text of the first `<name>...</name>` of `document`, unescaped of XML's five entities; nil when absent.
    static func element(_ name: String, in document: String) -> String? {
        guard let open = document.firstRange(of: "<\(name)>"),
            let close = document[open.upperBound...].firstRange(of: "</\(name)>")
        else { return nil }
        let text = document[open.upperBound..<close.lowerBound]
        guard !text.isEmpty, text.count <= 1024 else { return nil }
        return text.split(separator: "&amp;", omittingEmptySubsequences: false).map {
            $0.split(separator: "&lt;", omittingEmptySubsequences: false).joined(separator: "<")
                .split(separator: "&gt;", omittingEmptySubsequences: false).joined(separator: ">")
                .split(separator: "&quot;", omittingEmptySubsequences: false).joined(separator: "\"")
                .split(separator: "&apos;", omittingEmptySubsequences: false).joined(separator: "'")
        }.joined(separator: "&")
    }

    /// Whether `text` looks like an S3 error code (`AccessDenied`, `SlowDown`): 1 to 64 ASCII letters, digits, `.`,
    /// `_` or `-`.
    static func isCode(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.utf8.allSatisfy {
                (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2E
                    || $0 == 0x5F || $0 == 0x2D
            }
    }

    /// S3's code for a status that came without an error document (a `HEAD`'s answer has no body).
    static func code(forStatus status: Int) -> String {
        switch status {
        case 301, 307: "PermanentRedirect"
        case 400: "BadRequest"
        case 403: "AccessDenied"
        case 404: "NoSuchKey"
        case 429: "SlowDown"
        case 503: "ServiceUnavailable"
        default: "HTTP\(status)"
        }
    }
}
