import RichPushCore

/// The response headers of a transfer as curl hands them over, one line at a time: their size across every
/// response (redirects included) held to a bound, and the latest response's ETag, Last-Modified, Location,
/// Retry-After and Content-Type as received. It judges what a response means from its status and those values; it
/// reads nothing from curl (the transfer passes the status in), so each decision is tested without a socket.
struct ResponseHead {
    /// What the first body bytes of a response are.
    enum BodyStart: Equatable {
        /// A redirect's body: read and dropped (`RedirectPolicy.drop(_:)`), so that the connection can be reused.
        case redirect
        /// Not a body to take: the status says why.
        case refused(FetchFailure)
        /// The body to take.
        case take
    }

    /// What a response that curl finished without an error leads to.
    enum Ending: Equatable {
        /// A redirect to follow.
        case redirect
        /// 304 Not Modified to a conditional request: the copy its validators came from stands.
        case notModified
        /// No body to take, for this reason.
        case failed(FetchFailure)
        /// A body was taken: the outcome waits for its type.
        case body
    }

    /// The statuses whose Location is followed.
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// The most header bytes of all the transfer's responses together.
    let maximumBytes: Int
    /// Header bytes so far, of every response of the transfer.
    private(set) var bytes = 0
    private(set) var etag: String?
    private(set) var lastModified: String?
    private(set) var location: String?
    private(set) var retryAfter: String?
    /// The Content-Type as kept for the media's provenance (`FetchedMedia.Provenance.contentType(sent:)`).
    private(set) var contentType: String?
    /// The latest response's Content-Length, as its first such header gave it (digits alone).
    private var contentLength: [UInt8]?

    init(maximumBytes: Int) {
        self.maximumBytes = maximumBytes
    }

    /// Takes one header line (`Name: value\r\n`, or a status line, which starts a response and forgets the last
    /// one's values). Returns why the transfer must stop (the headers passed their bound), or nil.
    mutating func take(_ line: UnsafeRawBufferPointer) -> FetchFailure? {
        bytes += line.count
        guard bytes <= maximumBytes else {
            return FetchFailure(.badResponse, "more than \(maximumBytes) bytes of response headers")
        }
        guard line.count > 5 else { return nil }
        if line.starts(with: "HTTP/".utf8) {
            forgetResponse()
        } else if let value = Self.valueBytes(line, named: "transfer-encoding") {
            return Self.unrequestedCoding(value)
        } else if let value = Self.valueBytes(line, named: "content-length") {
            return takeContentLength(value)
        } else if let value = Self.valueBytes(line, named: "content-type") {
            // Bounded before it becomes a String: the header bound alone would let it reach megabytes.
            contentType = FetchedMedia.Provenance.contentType(sent: UnsafeRawBufferPointer(rebasing: value))
        } else if let value = Self.headerValue(line, named: "etag") {
            etag = value
        } else if let value = Self.headerValue(line, named: "last-modified") {
            lastModified = value
        } else if let value = Self.headerValue(line, named: "location") {
            location = value
        } else if let value = Self.headerValue(line, named: "retry-after") {
            retryAfter = value
        }
        return nil
    }

    /// Why a response whose Transfer-Encoding holds a coding other than chunked is refused, or nil. No request
    /// asks for one (none sends `TE`), and libcurl 7.88 decodes gzip and deflate transfer codings whatever
    /// CURLOPT_TRANSFER_ENCODING says: a few kilobytes on the wire became the whole byte cap on disk, and a body
    /// was sniffed as what the decoding made of it, where a Content-Encoding is never decoded. Refused at the
    /// header, before a byte of the body is read.
    static func unrequestedCoding(_ value: UnsafeRawBufferPointer.SubSequence) -> FetchFailure? {
        // The codings as libcurl reads them: names between commas, spaces and tabs, in any case.
        let codings = value.split { $0 == UInt8(ascii: ",") || $0 == 0x20 || $0 == 0x09 }
        guard codings.contains(where: { !$0.elementsEqual("chunked".utf8) { ($0 | 0x20) == $1 } }) else { return nil }
        let text = String(decoding: value.prefix(200), as: UTF8.self)
        return FetchFailure(
            .badResponse, "Transfer-Encoding '\(text)' was not asked for: only chunked is read, nothing decoded")
    }

    /// Takes a Content-Length header: refused (RFC 9110, 8.6) when it is not a length, or when it, or another of
    /// the same response, says another length. libcurl 7.88 reads the last of two: where two disagreed the body was
    /// taken to whichever came last, complete or cut short.
    private mutating func takeContentLength(_ value: UnsafeRawBufferPointer.SubSequence) -> FetchFailure? {
        // A list of the same length (`42, 42`) is one length.
        let lengths = value.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false).map {
            Array(Self.trimmed($0))
        }
        let text = String(decoding: value.prefix(100), as: UTF8.self)
        guard let first = lengths.first, !first.isEmpty, first.allSatisfy({ (0x30...0x39).contains($0) }),
            lengths.allSatisfy({ $0 == first })
        else {
            return FetchFailure(.badResponse, "Content-Length '\(text)' is not one length: the body's end is not known")
        }
        if let earlier = contentLength, earlier != first {
            let said = String(decoding: earlier.prefix(40), as: UTF8.self)
            return FetchFailure(
                .badResponse,
                "two Content-Length headers say \(said) and \(text) bytes: the body's end is not known")
        }
        contentLength = first
        return nil
    }

    /// Forgets the latest response's values (a new response, or a new hop); the byte count goes on.
    mutating func forgetResponse() {
        contentLength = nil
        etag = nil
        lastModified = nil
        location = nil
        retryAfter = nil
        contentType = nil
    }

    /// The value of a header line `Name: value\r\n` when its name is `name` (lowercase), trimmed.
    static func headerValue(_ line: UnsafeRawBufferPointer, named name: String) -> String? {
        guard let value = valueBytes(line, named: name), !value.isEmpty else { return nil }
        return String(decoding: value, as: UTF8.self)
    }

    /// The bytes of `headerValue(_:named:)`, not yet a String (possibly empty).
    static func valueBytes(_ line: UnsafeRawBufferPointer, named name: String) -> UnsafeRawBufferPointer.SubSequence? {
        // The name's bytes are read in place: this runs for every header line of every response.
        let count = name.utf8.count
        guard line.count > count, line[count] == UInt8(ascii: ":") else { return nil }
        for (index, byte) in name.utf8.enumerated() where (line[index] | 0x20) != byte { return nil }
        return trimmed(line[(count + 1)...])
    }

    /// `bytes` without the spaces, tabs, CRs and LFs at either end.
    private static func trimmed(_ bytes: UnsafeRawBufferPointer.SubSequence) -> UnsafeRawBufferPointer.SubSequence {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
        var value = bytes
        while let first = value.first, isSpace(first) { value = value.dropFirst() }
        while let last = value.last, isSpace(last) { value = value.dropLast() }
        return value
    }

    /// The validators the response sent, for the stored media.
    var validators: Validators { Validators(response: etag, lastModified: lastModified) }

    /// Whether a response of `status` with these headers is a redirect to follow.
    func isRedirect(status: Int) -> Bool {
        location != nil && Self.redirectStatuses.contains(status)
    }

    /// Why a response of `status` is not the body asked for (a 206 to a request for the whole, anything outside
    /// 2xx, with its Retry-After for a caller that retries), or nil.
    func statusFailure(_ status: Int) -> FetchFailure? {
        if status == 206 { return FetchFailure(.httpStatus, "HTTP 206: a partial response to a request for the whole") }
        guard (200...299).contains(status) else {
            return FetchFailure(.httpStatus, "HTTP \(status)", cause: .status(status, retryAfter: retryAfter))
        }
        return nil
    }

    /// What the first body bytes of a response of `status` are.
    func bodyStart(status: Int) -> BodyStart {
        if isRedirect(status: status) { return .redirect }
        if let failure = statusFailure(status) { return .refused(failure) }
        return .take
    }

    /// What a response of `status` that curl finished without an error leads to: `bodyBegun` when its body was
    /// taken, `probe` for a probe (which never ends `notModified`), `conditional` when validators were sent.
    func ending(status: Int, bodyBegun: Bool, probe: Bool, conditional: Bool) -> Ending {
        if isRedirect(status: status) { return .redirect }
        if bodyBegun { return .body }
        if !probe, conditional, status == 304 { return .notModified }
        return .failed(statusFailure(status) ?? FetchFailure(.emptyBody, "HTTP \(status) with no body"))
    }
}
