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
    /// Its `x-amz-checksum-sha256`, when it had one.
    var checksum: String? = nil
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

    /// The store answered `response` with an error: its `<Code>` and `<Message>`, or the status alone. A `<Code>`
    /// holding one of `secrets` (4 characters at least: the secret key, the session token) is not taken: a store
    /// may echo the request, and the code becomes a metric's label and a log field.
    init(response: StoreResponse, method: String, url: String, secrets: [String]) {
        let document = String(decoding: response.body, as: UTF8.self)
        let given = Self.element("Code", in: document)
        let message = Self.element("Message", in: document)
        // The code becomes a metric's label and a word in every message: only one that looks like S3's (letters,
        // digits, `.`, `_`, `-`; 64 at most) is taken; another is quoted in the detail, its status's code used.
        let accepted = given.flatMap { given in
            Self.isCode(given) && !secrets.contains(where: { $0.count >= 4 && given.contains($0) }) ? given : nil
        }
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
    /// (retryable for a refused, reset or dropped connection, and a connection not made within the connect timeout
    /// while the deadline leaves time).
    init(curl: CURLcode, message: String, url: String, stop: StopFlag, deadline: ContinuousClock.Instant) {
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
        // libcurl's timeout is the deadline's, less the time it takes to see it: within 10 ms, the deadline's.
        case CURLE_OPERATION_TIMEDOUT where deadline - ContinuousClock.now <= .milliseconds(10):
            self.init(code: "expired", detail: "the deadline came before the store answered (\(url): \(message))")
        case CURLE_OPERATION_TIMEDOUT:
            // The connect timeout (10 s at most), with the deadline still ahead: another connection may be made.
            self.init(
                code: "network", detail: "cannot reach the store at \(url) in time: \(message)", retryable: true)
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

    /// Whether `body`, a success's, is an S3 error document (`<Error>` first): S3 answers some failures 200 with
    /// one (CopyObject, CompleteMultipartUpload), and a store may do so for a `PUT`.
    static func isErrorDocument(_ body: [UInt8]) -> Bool {
        var rest = body[...]
        // An XML declaration, then whitespace, then the root element.
        if rest.starts(with: Array("<?xml".utf8)), let end = rest.firstIndex(of: UInt8(ascii: ">")) {
            rest = rest[(end + 1)...]
        }
        rest = rest.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        return rest.starts(with: Array("<Error>".utf8)) || rest.starts(with: Array("<Error ".utf8))
    }

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
        case 301, 308: "PermanentRedirect"
        case 302, 303, 307: "TemporaryRedirect"
        case 400: "BadRequest"
        case 403: "AccessDenied"
        case 404: "NoSuchKey"
        case 429: "SlowDown"
        case 503: "ServiceUnavailable"
        default: "HTTP\(status)"
        }
    }
}
