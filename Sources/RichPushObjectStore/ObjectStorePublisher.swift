internal import CCurl
import Dispatch
import RichPushCore
import RichPushFetch
import RichPushMedia

#if canImport(Glibc)
    import Glibc
#endif

/// Publishes attachments to an S3-compatible object store (AWS S3, Cloudflare R2, Backblaze B2, MinIO, Ceph,
/// SeaweedFS), content-addressed: an attachment is stored as `<prefix>/<sha256>.<ext>` and published as
/// `<publicBaseURL>/<key>`, so that a campaign's image is uploaded once by every worker that meets it.
///
/// Each publication first asks the store for the key (`HEAD`): present with the attachment's length, it is not
/// uploaded again (a hit). Otherwise a `PUT` stores it with the sniffed type's `Content-Type` (never the origin's),
/// `Cache-Control` (`Configuration.cacheControl`), and the body's SHA-256 twice: in `x-amz-content-sha256`, which the
/// Signature Version 4 signature covers, and in `x-amz-checksum-sha256`, which the store checks against the bytes it
/// received (a corrupted upload is refused with `BadDigest`, never stored). Requests are signed by libcurl
/// (`CURLOPT_AWS_SIGV4`); libcurl 7.88 does not hash a streamed body itself, which is why the hash is given.
///
/// Uploads run on threads of the publisher's own (`Configuration.concurrentUploads`), one libcurl handle each
/// (its connection to the store is kept between uploads), never on the cooperative pool or the fetch loop. Each
/// ends by the payload's deadline (`expired`), is retried as a fetch is after a 5xx, a 429 or `SlowDown`, or a
/// refused or dropped connection, and fails with the store's own error code (`AccessDenied`, `NoSuchBucket`,
/// `SignatureDoesNotMatch`...). No message, statistic or description holds the secret.
public final class ObjectStorePublisher: MediaPublisher {
    /// Where and how it publishes.
    public let configuration: Configuration
    private let threads: WorkerThreads
    private let handles: HandleSlots
    private let counts = LockedValue(PublishStatistics())
    private let flights: PublicationFlights
    private let existence = LockedValue(ExistenceState())
    /// The copy of `configuration.caBundle` libcurl reads (`CertificateBundleCopy`), made at init; nil without one.
    private let certificateBundle: CertificateBundleCopy?

    /// A publisher for `configuration`; its threads start at the first publication.
    /// - Throws: `ConfigurationError` from `Configuration.validate()`.
    public init(_ configuration: Configuration) throws(ConfigurationError) {
        try configuration.validate()
        self.configuration = configuration
        threads = WorkerThreads(name: "rp-upload", count: configuration.concurrentUploads)
        handles = HandleSlots(count: configuration.concurrentUploads)
        flights = PublicationFlights(memory: configuration.publishedMemory, capacity: 100_000)
        certificateBundle = configuration.caBundle.map { CertificateBundleCopy.shared(of: $0) }
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
    }

    deinit {
        // The uploads under way stop at once (their callers are answered `cancelled`); the threads end by themselves.
        threads.shutdown(.refuse)
    }

    /// Uploads running on the publisher's threads now (tests: an upload cut by its deadline has ended).
    var uploadsRunning: Int { threads.running }

    /// What it has done so far: uploads, their bytes and durations, hits, failures by code.
    public var statistics: PublishStatistics? { counts.withLock { $0 } }

    /// The key `media` is stored under: `<prefix>/<sha256>.<ext>`.
    public func key(for media: FetchedMedia) -> String {
        configuration.key(named: media.sha256 + "." + media.type.fileExtension)
    }

    /// Publishes `media` within `configuration.timeout`, blocking the calling thread (never call it on the
    /// cooperative pool: `publish(_:deadline:)` is the asynchronous form).
    public func publish(_ media: FetchedMedia) throws(PublishFailure) -> String {
        let done = DispatchSemaphore(value: 0)
        let result = LockedValue<Result<String, PublishFailure>?>(nil)
        submit(media, deadline: .now + configuration.timeout) { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }

    /// Publishes `media` by `deadline`: its URL, or why not (`PublishFailure.code` is the store's error code,
    /// `expired`, `cancelled`, `network` or `unreadable`). Cancelling the task stops the upload.
    public func publish(_ media: FetchedMedia, deadline: ContinuousClock.Instant) async throws(PublishFailure)
        -> String
    {
        let stop = StopFlag()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                submit(media, deadline: deadline, stop: stop) { continuation.resume(returning: $0) }
            }
        } onCancel: {
            stop.set()
        }
        return try result.get()
    }

    /// Starts one publication; `completion` is called exactly once, with its outcome. A key published lately is
    /// answered at once; one being published now is waited for (one upload serves every payload of a campaign
    /// that meets it at once); else an upload is queued for a thread. A caller still waiting at its deadline is
    /// answered `expired` then (its upload, when it leads one and it has not started, is withdrawn).
    private func submit(
        _ media: FetchedMedia, deadline: ContinuousClock.Instant, stop: StopFlag = StopFlag(),
        completion: @escaping @Sendable (Result<String, PublishFailure>) -> Void
    ) {
        guard media.sha256.count == 64, media.sha256.utf8.allSatisfy({ hexValue($0, lowercaseOnly: true) != nil })
        else {
            counts.withLock { $0.countFailure("unreadable") }
            completion(.failure(PublishFailure("the attachment has no SHA-256 to name it by", code: "unreadable")))
            return
        }
        let key = key(for: media)
        let answer: PublicationFlights.Completion = { [counts] outcome in
            counts.withLock { counts in
                if case .failure(let failure) = outcome { counts.countFailure(failure.code) }
            }
            completion(outcome)
        }
        let follower: PublicationFlights.Completion = { [self] outcome in
            // The upload it waited for ended by its leader's deadline or cancellation, not by the store's answer:
            // with time left of its own (50 ms at least: its own deadline's answer comes here too), it asks again
            // (and leads, most likely). A short-deadline payload had made every payload of the same image waiting
            // on it fail with its deadline.
            if case .failure(let failure) = outcome, failure.code == "expired" || failure.code == "cancelled",
                !stop.isSet, deadline - ContinuousClock.now > .milliseconds(50)
            {
                submit(media, deadline: deadline, stop: stop, completion: completion)
                return
            }
            if case .success = outcome { counts.withLock { $0.hits += 1 } }
            answer(outcome)
        }
        switch flights.join(key, leader: answer, follower: follower) {
        case .published(let url):
            counts.withLock { $0.hits += 1 }
            completion(.success(url))
            return
        case .follow(let id):
            expire(key, id, at: deadline, ticket: nil)
        case .lead(let id):
            let ticket = threads.submit(stop: { stop.set() }) { [self] turn in
                switch turn {
                case .run(let thread):
                    flights.finish(
                        key, perform(media, key: key, deadline: deadline, handle: handles.handle(thread), stop: stop))
                case .withdrawn:
                    flights.finish(
                        key,
                        .failure(PublishFailure("the deadline came before an upload thread was free", code: "expired")))
                case .dropped:
                    flights.finish(key, .failure(PublishFailure("the publisher has shut down", code: "cancelled")))
                }
            }
            expire(key, id, at: deadline, ticket: ticket)
        }
    }

    /// At `deadline`, answers caller `id` of `key` `expired` if it is still waiting, and withdraws `ticket`'s upload
    /// if no thread has started it.
    private func expire(
        _ key: String, _ id: UInt64, at deadline: ContinuousClock.Instant, ticket: WorkerThreads.Ticket?
    ) {
        let wait = max(0, (deadline - .now).inMilliseconds)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(wait)) { [flights, threads] in
            if let ticket { threads.withdraw(ticket) }
            flights.abandon(key, id)?(
                .failure(PublishFailure("the deadline came before the upload of \(key) finished", code: "expired")))
        }
    }

    /// One publication on an upload thread: `HEAD`, then `PUT` when needed, retried while the deadline allows.
    private func perform(
        _ media: FetchedMedia, key: String, deadline: ContinuousClock.Instant, handle: EasyHandle, stop: StopFlag
    ) -> Result<String, PublishFailure> {
        let url = configuration.requestURL(forKey: key)
        let published = configuration.publicBaseURL + "/" + key
        let start = ContinuousClock.now
        var attempt = 0
        while true {
            let outcome = attemptOnce(media, url: url, deadline: deadline, handle: handle, stop: stop)
            switch outcome {
            case .stored:
                counts.withLock { $0.recordUpload(bytes: media.bytes, duration: .now - start) }
                return .success(published)
            case .present:
                counts.withLock { $0.hits += 1 }
                return .success(published)
            case .failed(let failure, let retryable):
                let wait = Duration.milliseconds(100 << min(attempt, 6))
                guard retryable, attempt < configuration.retries, ContinuousClock.now + wait < deadline,
                    stop.sleep(wait)
                else {
                    let tries = attempt == 0 ? "" : " (after \(attempt + 1) attempts)"
                    let detail = Self.hidingSecrets(failure.detail, of: configuration.credentials)
                    return .failure(PublishFailure(detail + tries, code: failure.code))
                }
                attempt += 1
            }
        }
    }

    /// The secret key and the session token, which no error code or detail taken from the store may show.
    private var secrets: [String] { Self.secrets(of: configuration.credentials) }

    private static func secrets(of credentials: ObjectStoreCredentials) -> [String] {
        [credentials.secretAccessKey, credentials.sessionToken ?? ""]
    }

    /// `text` (a store's message quoted) with the secret key, the session token and any SigV4 signature hidden: a
    /// store may echo the request it refused (a probe's did, its `<Message>` holding the headers), and the detail
    /// goes to results and logs.
    static func hidingSecrets(_ text: String, of credentials: ObjectStoreCredentials) -> String {
        var text = text
        for secret in secrets(of: credentials) where secret.count >= 4 {
            text = text.replacing(secret, with: "<hidden>")
        }
        // `Signature=` and its hexadecimal digits (64): an Authorization header's, or a presigned URL's.
        var hidden = ""
        var rest = text[...]
        while let found = rest.firstRange(of: "Signature=") {
            hidden += rest[..<found.upperBound]
            rest = rest[found.upperBound...]
            let digits = rest.prefix { $0.isHexDigit }
            if digits.count >= 16 {
                hidden += "<hidden>"
                rest = rest.dropFirst(digits.count)
            }
        }
        return hidden + rest
    }

    private enum AttemptOutcome {
        case stored, present
        case failed(PublishFailure, retryable: Bool)
    }

    /// One `HEAD` and, unless the object is there with the same length, one `PUT`; with `ifNoneMatch`, the
    /// conditional `PUT` alone.
    private func attemptOnce(
        _ media: FetchedMedia, url: String, deadline: ContinuousClock.Instant, handle: EasyHandle, stop: StopFlag
    ) -> AttemptOutcome {
        let conditional: Bool =
            switch configuration.existenceCheck {
            case .head: false
            case .ifNoneMatch: true
            case .auto: existence.withLock { $0.nextIsConditional() }
            }
        if !conditional, let outcome = head(media, url: url, deadline: deadline, handle: handle, stop: stop) {
            return outcome
        }
        switch request(
            .put, url: url, media: media, deadline: deadline, handle: handle, stop: stop, conditional: conditional)
        {
        case .failure(let failure):
            return .failed(failure.publishFailure, retryable: failure.retryable)
        case .success(let response)
        where (200..<300).contains(response.status) && !StoreError.isErrorDocument(response.body):
            // A store that says it computed another digest stored other bytes (a corrupting proxy, a broken store):
            // not published, tried again.
            let sent = Self.base64(hex: media.sha256)
            if let said = response.checksum, said != sent {
                let detail =
                    "the store answered HTTP \(response.status) to PUT \(url) with x-amz-checksum-sha256 "
                    + "'\(TerminalText.withoutControls(String(said.prefix(64))))', not the '\(sent)' sent"
                return .failed(PublishFailure(detail, code: "BadDigest"), retryable: true)
            }
            return .stored
        case .success(let response) where response.status == 412 && conditional:
            existence.withLock { $0.found() }
            return .present
        case .success(let response):
            let failure = StoreError(response: response, method: "PUT", url: url, secrets: secrets)
            return .failed(failure.publishFailure, retryable: failure.retryable)
        }
    }

    /// The `HEAD` before an upload: `.present` when the object is there with the same length, a failure, or nil
    /// when it is to be uploaded; what it found is told to `existence` (`auto`'s choice of the next check).
    private func head(
        _ media: FetchedMedia, url: String, deadline: ContinuousClock.Instant, handle: EasyHandle, stop: StopFlag
    ) -> AttemptOutcome? {
        switch request(.head, url: url, media: media, deadline: deadline, handle: handle, stop: stop) {
        case .failure(let failure):
            return .failed(failure.publishFailure, retryable: failure.retryable)
        case .success(let response) where response.status == 200 && response.contentLength == Int64(media.bytes):
            existence.withLock { $0.found() }
            return .present
        case .success(let response) where response.status >= 500 || response.status == 429:
            let failure = StoreError(response: response, method: "HEAD", url: url, secrets: secrets)
            return .failed(failure.publishFailure, retryable: true)
        case .success:
            // 404 (absent), 403 (an identity that may write but not list sees a missing key as forbidden), 200
            // with another length (a different object under the name: rewritten whole): upload.
            existence.withLock { $0.missed() }
            return nil
        }
    }

    enum Method { case head, put }

    /// The headers of a request for `media` besides those libcurl adds (`Host`, `Authorization`, `x-amz-date`,
    /// `Content-Length`): every one is signed. Never a header removed with an empty value: libcurl 7.88 signs it
    /// all the same, and the store answers `SignatureDoesNotMatch`.
    func headers(_ method: Method, for media: FetchedMedia, conditional: Bool = false) -> [String] {
        var headers = ["x-amz-content-sha256: " + (method == .put ? media.sha256 : Self.emptySHA256)]
        if method == .put {
            headers += [
                "Content-Type: " + media.type.mime, "Cache-Control: " + configuration.cacheControl,
                "x-amz-checksum-sha256: " + Self.base64(hex: media.sha256),
            ]
            if conditional { headers.append("If-None-Match: *") }
        }
        if let token = configuration.credentials.sessionToken { headers.append("x-amz-security-token: " + token) }
        return headers
    }

    /// One signed request on `handle`, ended by `deadline` or `stop`.
    private func request(
        _ method: Method, url: String, media: FetchedMedia, deadline: ContinuousClock.Instant, handle: EasyHandle,
        stop: StopFlag, conditional: Bool = false
    ) -> Result<StoreResponse, StoreError> {
        let remaining = (deadline - .now).inMilliseconds
        guard remaining > 0 else {
            return .failure(StoreError(code: "expired", detail: "the deadline came before the upload finished"))
        }
        var file: UnsafeMutablePointer<FILE>? = nil
        defer { if let file { fclose(file) } }
        let headers = self.headers(method, for: media, conditional: conditional)
        if method == .put {
            file = fopen(media.path, "rb")
            guard let file else {
                return .failure(
                    StoreError(
                        code: "unreadable", detail: "cannot read \(media.path): \(String(cString: strerror(errno)))"))
            }
            var info = stat()
            guard fstat(fileno(file), &info) == 0 else {
                return .failure(StoreError(code: "unreadable", detail: "cannot read \(media.path)"))
            }
            let body = UnsafeMutableRawPointer(file)
            do {
                try handle.set(CURLOPT_UPLOAD, 1)
                try handle.set(CURLOPT_READDATA, pointer: body)
                try handle.set(CURLOPT_INFILESIZE_LARGE, offset: Int64(info.st_size))
            } catch {
                return .failure(StoreError(code: "network", detail: error.detail))
            }
        }
        let buffer = UnsafeMutablePointer<ccurl_body_buffer>.allocate(capacity: 1)
        buffer.initialize(to: ccurl_body_buffer())
        defer { buffer.deallocate() }
        do {
            try handle.set(CURLOPT_URL, url)
            try handle.set(CURLOPT_NOSIGNAL, 1)
            try handle.set(CURLOPT_PROXY, "")
            if method == .head { try handle.set(CURLOPT_NOBODY, 1) }
            try handle.set(CURLOPT_TIMEOUT_MS, remaining)
            try handle.set(CURLOPT_CONNECTTIMEOUT_MS, min(remaining, 10_000))
            try handle.set(CURLOPT_AWS_SIGV4, "aws:amz:\(configuration.region):s3")
            try handle.set(CURLOPT_USERNAME, configuration.credentials.accessKeyID)
            try handle.set(CURLOPT_PASSWORD, configuration.credentials.secretAccessKey)
            try handle.set(CURLOPT_USERAGENT, "richpush/\(RichPushVersion.current)")
            try handle.set(CURLOPT_HTTPHEADER, list: headers)
            try handle.trust(certificateBundle?.source())
        } catch {
            handle.reset()
            return .failure(StoreError(code: "network", detail: error.detail))
        }
        guard ccurl_easy_collect_body(handle.raw, buffer) == CURLE_OK,
            ccurl_easy_abort_when_set(handle.raw, stop.pointer) == CURLE_OK
        else {
            handle.reset()
            return .failure(StoreError(code: "network", detail: "libcurl refused the body and progress callbacks"))
        }
        let code = curl_easy_perform(handle.raw)
        defer { handle.reset() }
        guard code == CURLE_OK else {
            return .failure(
                StoreError(curl: code, message: handle.errorMessage(code), url: url, stop: stop, deadline: deadline))
        }
        let body = Array(
            UnsafeRawBufferPointer(start: UnsafeRawPointer(buffer), count: buffer.pointee.length))
        // The digest the store says it computed of what it stored (AWS answers one when asked for a checksum).
        return .success(
            StoreResponse(
                status: handle.responseCode, contentLength: handle.info(offset: CURLINFO_CONTENT_LENGTH_DOWNLOAD_T),
                body: body, checksum: handle.header("x-amz-checksum-sha256")))
    }

    /// The SHA-256 of no bytes, what a `HEAD` sends as its payload hash.
    static let emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// The bytes a hex string spells, in base64 (`x-amz-checksum-sha256` wants the digest so).
    static func base64(hex: String) -> String {
        let digits = Array(hex.utf8)
        var bytes: [UInt8] = []
        var index = 0
        while index + 1 < digits.count {
            bytes.append(
                UInt8(
                    hexValue(digits[index], lowercaseOnly: true)! << 4 | hexValue(
                        digits[index + 1], lowercaseOnly: true)!))
            index += 2
        }
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var output: [UInt8] = []
        var offset = 0
        while offset < bytes.count {
            let chunk = bytes[offset..<min(offset + 3, bytes.count)]
            let value = chunk.enumerated().reduce(0) { $0 | Int($1.element) << (16 - 8 * $1.offset) }
            for position in 0..<4 {
                output.append(
                    position <= chunk.count ? alphabet[(value >> (18 - 6 * position)) & 0x3F] : UInt8(ascii: "="))
            }
            offset += 3
        }
        return String(decoding: output, as: UTF8.self)
    }
}

/// One libcurl handle per upload thread, made at the thread's first upload and touched only by that thread (its
/// connection to the store is reused by the thread's next upload).
private final class HandleSlots: @unchecked Sendable {
    private let slots: UnsafeMutablePointer<EasyHandle?>
    private let count: Int

    init(count: Int) {
        self.count = count
        slots = .allocate(capacity: count)
        slots.initialize(repeating: nil, count: count)
    }

    deinit {
        slots.deinitialize(count: count)
        slots.deallocate()
    }

    /// The handle of thread `thread` (called on that thread only).
    func handle(_ thread: Int) -> EasyHandle {
        if let handle = slots[thread] { return handle }
        let handle = EasyHandle()
        slots[thread] = handle
        return handle
    }
}

/// What stops one upload from another thread: read by libcurl's progress callback (`ccurl_easy_abort_when_set`)
/// and by the wait between retries.
final class StopFlag: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<Int32>

    init() {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: 0)
    }

    deinit { pointer.deallocate() }

    /// Stops the upload (from any thread).
    func set() { ccurl_flag_set(pointer) }

    var isSet: Bool { ccurl_flag_is_set(pointer) != 0 }

    /// Waits `duration` in slices of 10 ms; false when stopped meanwhile.
    func sleep(_ duration: Duration) -> Bool {
        let end = ContinuousClock.now + duration
        while ContinuousClock.now < end {
            if isSet { return false }
            usleep(UInt32(max(1, min(10, (end - .now).inMilliseconds) * 1000)))
        }
        return !isSet
    }
}
