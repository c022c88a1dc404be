import RichPush
import RichPushHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// The service's routes over one engine: `/v1/enrich` (JSON or NDJSON), `/v1/explain`, `/v1/preflight`,
/// `/v1/attachments/...`, `/healthz`, `/readyz` and `/metrics`; with the token, the in-flight bound, the drain state
/// and the access log.
package final class EnrichmentService: HTTPHandler {
    /// What the service is told beyond the engine's configuration. Defaults are documented in docs/service.md.
    package struct Settings: Sendable {
        /// The largest JSON body. Default 1 MiB, the payload limit.
        package var maximumBodyBytes = 1 << 20
        /// The largest NDJSON body. Default 64 MiB: 64 payloads at the payload limit, or tens of thousands of
        /// typical ones; the body is held while its lines are processed.
        package var maximumBatchBytes = 64 << 20
        /// The most requests admitted at once to `/v1/enrich` and `/v1/explain`, from their headers (an upload
        /// counts) to the end of their work (an NDJSON request counts once); beyond it, 503 before the body is
        /// read. Default 256.
        package var maximumInFlight = 256
        /// How many lines of one NDJSON request are processed at once. Default
        /// `Enricher.Configuration.defaultConcurrency` (32), as `stream`.
        package var concurrency = Enricher.Configuration.defaultConcurrency
        /// The bearer token `/v1/` routes require, or nil for none.
        package var token: [UInt8]? = nil
        /// Whether `/v1/` routes require a tenant's token (`serve --tenants`; the tenants are set by
        /// `replaceTenants`): each request then runs under its tenant's engine and bounds. Default off.
        package var tenants = false
        /// The `Retry-After` of a 503, in seconds. Default 1: work in flight ends within a deadline, and most
        /// payloads take far less.
        package var retryAfterSeconds = 1
        /// The NDJSON results that may wait for a client that does not read before its lines stop being taken.
        /// Default `ResponseStream.defaultCapacity`, 256 KiB.
        package var responseBufferBytes = ResponseStream.defaultCapacity

        package init() {}
    }

    private let enricher: Enricher
    private let settings: Settings
    package let metrics = ServiceMetrics()
    private let attachments: ServedAttachments
    private let ledger = LockedValue(RequestLedger())
    /// `/metrics`' renderings, shared by the scrapes.
    private let metricsCache = MetricsCache()
    /// `--max-in-flight`: requests admitted to `/v1/enrich` and `/v1/explain`, from their headers to the end of
    /// their work; closed by the drain.
    private let admission: WorkGate
    private let log: @Sendable ([UInt8]) -> Void
    private let requestIDs = RequestIDs()
    /// The 413s of a JSON body and of an NDJSON one, made once: every request to `/v1/` carries one.
    private let tooLarge: (json: HTTPResponse, batch: HTTPResponse)
    /// The tenants, with `settings.tenants`; every one's engine shares `enricher`'s fetch loop.
    private let tenantTable: TenantTable?

    /// The service over `enricher`; `log` takes each access log line (JSON and a newline).
    package init(enricher: Enricher, settings: Settings, log: @escaping @Sendable ([UInt8]) -> Void) {
        self.enricher = enricher
        self.settings = settings
        self.log = log
        attachments = ServedAttachments(root: enricher.configuration.store.root)
        admission = WorkGate(limit: settings.maximumInFlight)
        tenantTable = settings.tenants ? TenantTable(base: enricher) : nil
        tooLarge = (
            Self.tooLarge(settings.maximumBodyBytes, .payloadTooLarge),
            Self.tooLarge(settings.maximumBatchBytes, .batchTooLarge)
        )
    }

    private static func tooLarge(_ limit: Int, _ code: EnrichmentProblem.Code) -> HTTPResponse {
        .error(413, code, "the body is larger than \(limit) bytes").prepared()
    }

    /// Replaces the tenants (`serve --tenants`, at start and at each reload): a request from now on is served by the
    /// tenant its token selects among `definitions`; one already admitted finishes under the tenant it started with.
    /// A tenant whose definition did not change keeps its engine and media cache. Without `settings.tenants`,
    /// does nothing.
    /// - Throws: what making a tenant's engine throws (`ConfigurationError`, `FetcherError`); the tenants are then
    ///   left as they were.
    package func replaceTenants(_ definitions: [Tenant.Definition]) throws {
        try tenantTable?.replace(with: definitions)
    }

    /// The tenants served now (their engines: shut them down after the service's own).
    package var tenants: [Tenant] { tenantTable?.tenants ?? [] }

    /// From now on `/readyz` answers 503 and new work is refused with 503.
    package func beginDraining() { admission.close() }

    /// Requests admitted and work not yet ended (`richpush_in_flight`).
    package var payloadsInFlight: Int { admission.inside }

    /// Whether the drain has begun and every request admitted has ended its work.
    package var isIdle: Bool { !admission.isOpen && admission.inside == 0 }

    /// Returns once the drain has begun and every request admitted has ended its work, or once the calling task is
    /// cancelled.
    package func untilIdle() async { await admission.untilIdle() }

    /// A request in progress, as the drain's report names it.
    package struct RequestInProgress: Sendable {
        package var method: String
        package var path: String
        package var requestID: String?
        /// `receiving-body`, `processing` or `sending-response`.
        package var stage: String
        /// Of a streamed response, the bytes sent so far.
        package var sentBytes: Int?
        package var elapsed: Duration
    }

    /// The requests in progress now, oldest first.
    package func requestsInProgress() -> [RequestInProgress] {
        let now = ContinuousClock.now
        let entries = ledger.withLock { Array($0.entries.values) }
        return entries.sorted { $0.started < $1.started }.map { entry in
            RequestInProgress(
                method: entry.method, path: entry.path, requestID: entry.requestID, stage: entry.stage.rawValue,
                sentBytes: entry.stream?.status.sent, elapsed: now - entry.started)
        }
    }

    /// Readies the requests in progress for their connections' close: every NDJSON response is ended where it is
    /// (a connection its reader suspended for want of results is resumed, and is never suspended again). Whether a
    /// request's work is still running (`respond(to:)` has not returned): its connection stays suspended, and
    /// libmicrohttpd cannot stop then.
    package func endResponsesForClose() -> Bool {
        let entries = ledger.withLock { Array($0.entries.values) }
        for entry in entries { entry.stream?.finish() }
        return entries.contains { $0.stage == .processing }
    }

    /// Writes the drain's report to the log: a line per request it cut off, then one for the drain.
    package func log(_ report: ServiceHost.DrainReport) {
        log(Self.drainLines(report))
    }

    /// `{"drain":"cut-off","method":...,"path":...,"request_id":...,"stage":...,"sent_bytes":...,"elapsed_ms":...}`
    /// per request cut off, then `{"drain":"done","cut_off":N,"elapsed_ms":...}`, each with a newline.
    static func drainLines(_ report: ServiceHost.DrainReport) -> [UInt8] {
        var lines: [UInt8] = []
        for request in report.cutOff {
            var members: [(String, PushPayload.JSON)] = [
                ("drain", .text("cut-off")), ("method", .text(request.method)), ("path", .text(request.path)),
            ]
            if let id = request.requestID { members.append(("request_id", .text(id))) }
            members.append(("stage", .text(request.stage)))
            if let sent = request.sentBytes { members.append(("sent_bytes", .integer(sent))) }
            members.append(("elapsed_ms", .integer(request.elapsed.inMilliseconds)))
            lines += JSONWriter.bytes(.object(JSONObject(members))) + [0x0A]
        }
        lines +=
            JSONWriter.bytes(
                .object(
                    JSONObject([
                        ("drain", .text("done")), ("cut_off", .integer(report.cutOff.count)),
                        ("elapsed_ms", .integer(report.elapsed.inMilliseconds)),
                    ]))) + [0x0A]
        return lines
    }

    // MARK: - Routing

    package func head(_ request: HTTPRequest) -> HTTPHead {
        let path = request.path
        let isDraining = !admission.isOpen
        let (decision, tenant) = decide(request, draining: isDraining)
        switch decision {
        case .read(_, _, let context) where context is MetricsScrape:
            // Health and metrics stay open whatever the load and the drain: no slot.
            return decision
        case .read:
            // The slot is taken before a byte of the body is read; refused at once when none is free (or the drain
            // began since `decide`).
            let admitted = admission.admit()
            if admitted == .admitted {
                if let tenant, let refusal = admit(tenant) {
                    admission.leave()
                    return .respond(answered(request, refusal, tenant: tenant))
                }
                ledger.withLock {
                    // The id the client gave (checked by `decide`), so that a request cut off in its upload is named.
                    $0.admitted(
                        request.number, method: request.method, path: path, requestID: request.headers["x-request-id"],
                        at: request.started, tenant: tenant)
                }
                return decision
            }
            return .respond(answered(request, busy(full: admitted == .full), tenant: tenant))
        case .respond(let response):
            return .respond(answered(request, response, tenant: tenant))
        }
    }

    /// `response`, the answer to `request` from its head alone. One that takes time to send (an attachment's file)
    /// is entered in the ledger, sending until it ends, so that the drain names it if it cuts it off; one of bytes
    /// (health, metrics, a refusal) is queued whole at once and holds nothing, so it is not: each entry is a table
    /// insertion and removal under the ledger's lock, which showed in `GET /healthz`'s profile (docs/performance.md,
    /// issue 26 round thirteen). Its tenant's name goes in its log either way.
    private func answered(_ request: HTTPRequest, _ response: HTTPResponse, tenant: Tenant?) -> HTTPResponse {
        var response = response
        if let tenant { response.log.tenant = tenant.name }
        if case .bytes = response.body { return response }
        ledger.withLock {
            $0.answered(request.number, method: request.method, path: request.path, at: request.started, tenant: tenant)
        }
        return response
    }

    /// Takes one of `tenant`'s slots and one request of its rate; nil when both are had, else the 429 saying which
    /// is exhausted (nothing is taken then). The slot is taken first: a request refused for want of one costs no
    /// part of the rate.
    private func admit(_ tenant: Tenant) -> HTTPResponse? {
        guard tenant.admission.admit() == .admitted else {
            tenant.rejections.record(.tenantInFlight)
            return .error(
                429, .tenantInFlight,
                "\(tenant.definition.maximumInFlight ?? 0) requests of tenant '\(tenant.name)' are in process; retry "
                    + "later",
                headers: [("Retry-After", String(settings.retryAfterSeconds))])
        }
        if let wait = tenant.takeFromRate() {
            tenant.admission.leave()
            tenant.rejections.record(.rateLimited)
            // Whole seconds, rounded up: a client retrying then finds a request's worth in the bucket.
            let seconds = max(1, Int(wait.inSeconds.rounded(.up)))
            return .error(
                429, .rateLimited, "tenant '\(tenant.name)' is over its rate; retry later",
                headers: [("Retry-After", String(seconds))])
        }
        return nil
    }

    /// What to do with a request from its head, and the tenant its token selected (under `--tenants`).
    private func decide(_ request: HTTPRequest, draining isDraining: Bool) -> (HTTPHead, Tenant?) {
        let path = request.path
        if path == "/metrics", request.method == "GET" || request.method == "HEAD" {
            // Answered off the server's thread, from a rendering shared by the scrapes (`MetricsCache`).
            return (.read(limit: 0, tooLarge: Self.metricsWithBody, context: MetricsScrape()), nil)
        }
        if let answer = HealthRoutes.answer(request, ready: !isDraining, notReady: "draining", metrics: renderMetrics) {
            return (.respond(answer), nil)
        }
        guard Self.routes.contains(path) || path.hasPrefix("/v1/attachments/") else {
            return (.respond(.error(404, .notFound, "no such route: \(path)")), nil)
        }
        let tenant: Tenant?
        switch authorized(request) {
        case .failure(let refusal): return (.respond(refusal.response), nil)
        case .success(let found): tenant = found
        }
        return (decide(request, tenant: tenant, draining: isDraining), tenant)
    }

    private func decide(_ request: HTTPRequest, tenant: Tenant?, draining isDraining: Bool) -> HTTPHead {
        let path = request.path
        switch path {
        case "/v1/enrich", "/v1/explain", "/v1/preflight":
            if let refusal = only(Self.post, request) { return .respond(refusal) }
            if isDraining { return .respond(busy(full: false)) }
            switch parameters(request, tenant: tenant) {
            case .failure(let refusal): return .respond(refusal.response)
            case .success(let parameters):
                let decided = Decided(tenant: tenant, parameters: parameters)
                return parameters.ndjson && path == "/v1/enrich"
                    ? .read(limit: settings.maximumBatchBytes, tooLarge: tooLarge.batch, context: decided)
                    : .read(limit: settings.maximumBodyBytes, tooLarge: tooLarge.json, context: decided)
            }
        case _ where path.hasPrefix("/v1/attachments/"):
            if let refusal = only(Self.getOrHead, request) { return .respond(refusal) }
            return .respond(
                attachment(
                    String(path.dropFirst("/v1/attachments/".count)), in: tenant?.attachments ?? attachments))
        default:
            return .respond(.error(404, .notFound, "no such route: \(path)"))
        }
    }

    /// A scrape of `/metrics` (`head` decided it takes no work slot): answered by `metricsCache`.
    private struct MetricsScrape: Sendable {}

    /// A body sent with `GET /metrics`.
    private static let metricsWithBody = HTTPResponse.error(413, .payloadTooLarge, "/metrics takes no body").prepared()

    /// What `head` decided for a request whose body it has read, carried to `respond(to:)` in the request's
    /// `context`: the tenant its token selected and its parameters as checked there. `respond` then neither looks
    /// the tenant up in the ledger (a lock every request takes several times) nor reads the parameters again
    /// (reading them went from 1.2% to 0.4% of the service's samples at 64 connections, one payload a request).
    private struct Decided: Sendable {
        let tenant: Tenant?
        /// The request id is empty when the client gave none: it is assigned in `respond`, once the body is in.
        let parameters: Parameters
    }

    /// What `head` decides for `request`, made again from the ledger's tenant (for a request without `head`'s
    /// context); nil when its parameters are refused.
    private func decidedAgain(_ request: HTTPRequest) -> Decided? {
        let tenant = ledger.withLock { $0.entries[request.number]?.tenant }
        guard case .success(let parameters) = parameters(request, tenant: tenant) else { return nil }
        return Decided(tenant: tenant, parameters: parameters)
    }

    package func respond(to request: HTTPRequest) async -> HTTPResponse {
        if request.context is MetricsScrape { return await metricsCache.response(render: renderMetrics) }
        // The tenant chosen at the headers: the request runs under it even if a reload has replaced it since.
        // `HTTPServer` calls this only after `head`'s `.read`, which carries what it decided; without it, the same
        // decision is made again from the ledger's tenant.
        guard let decided = request.context as? Decided ?? decidedAgain(request) else {
            return .error(400, .badParameter, "bad parameters")
        }
        let tenant = decided.tenant
        var parameters = decided.parameters
        // A given id has 1 to 200 characters: an empty one is none given, assigned now that the body is in.
        if parameters.requestID.isEmpty { parameters.requestID = requestIDs.next() }
        // The slot taken at the headers passes to the work.
        if !ledger.withLock({ $0.beginWork(request.number, requestID: parameters.requestID) }) {
            let admitted = admission.admit()
            guard admitted == .admitted else { return busy(full: admitted == .full) }
            if let tenant, let refusal = admit(tenant) {
                admission.leave()
                return refusal
            }
        }
        let work = Work(enricher: tenant?.enricher ?? enricher, tenant: tenant, parameters: parameters)
        var response: HTTPResponse
        if request.path == "/v1/explain" {
            defer { endWork(tenant) }
            response = await explain(request.body, work)
        } else if request.path == "/v1/preflight" {
            defer { endWork(tenant) }
            response = await preflight(request.body, work)
        } else if parameters.ndjson {
            // The slot is freed when the stream's work ends.
            response = enrichLines(request.body, work)
        } else {
            defer { endWork(tenant) }
            response = await enrich(request.body, work)
        }
        response.headers.append(("X-Request-Id", parameters.requestID))
        response.log.requestID = parameters.requestID
        let stream: ResponseStream?
        if case .stream(let made) = response.body { stream = made } else { stream = nil }
        ledger.withLock { $0.responding(request.number, stream: stream) }
        return response
    }

    package func completed(_ request: HTTPRequest, status: Int, log entry: HTTPResponse.Log, elapsed: Duration) {
        let ended = ledger.withLock { $0.complete(request.number) }
        if ended?.holdsSlot == true { endWork(ended?.tenant) }
        metrics.record(status: status)
        log(
            Self.accessLogLine(
                request, status: status, entry: entry, elapsed: elapsed, tenant: ended?.tenant?.name ?? entry.tenant))
    }

    /// The metrics exposition: the shared families, then the service's own gauges of NDJSON responses.
    private func renderMetrics() -> [UInt8] {
        let streams = ledger.withLock { ledger in ledger.entries.values.compactMap(\.stream) }
        var buffered = 0
        var held = 0
        for stream in streams {
            let status = stream.status
            buffered += status.waiting
            if status.writerHeld { held += 1 }
        }
        var text = "# HELP richpush_response_buffered_bytes NDJSON results made and not yet sent to their clients.\n"
        text += "# TYPE richpush_response_buffered_bytes gauge\nrichpush_response_buffered_bytes \(buffered)\n"
        text += "# HELP richpush_responses_held NDJSON requests whose lines wait for their client to read.\n"
        text += "# TYPE richpush_responses_held gauge\nrichpush_responses_held \(held)\n"
        let tenants = tenantTable?.tenants.map { tenant in
            ServiceMetrics.TenantCounts(
                name: tenant.name, metrics: tenant.metrics, inFlight: tenant.admission.inside,
                rejections: tenant.rejections.snapshot)
        }
        return metrics.render(
            engine: enricher.statistics, inFlight: admission.inside, draining: !admission.isOpen, tenants: tenants)
            + Array(text.utf8)
    }

    /// `{"method":...,"path":...,"status":...,"tenant":...,"request_id":...,"outcome":...,"incomplete":...,
    /// "elapsed_ms":...}` and a newline (`tenant` under `--tenants`, once the token selected one; `incomplete` when
    /// the request ended before its response was sent whole),
    /// written straight into one buffer: this runs on the server's thread for every request, and the JSON tree
    /// it was built as before (an array of members, a copy for the newline) showed in the service's profile. The
    /// names and punctuation between the values are constants, copied as they are.
    static func accessLogLine(
        _ request: HTTPRequest, status: Int, entry: HTTPResponse.Log, elapsed: Duration, tenant: String? = nil
    ) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(160 + request.path.utf8.count)
        func put(_ text: StaticString) {
            text.withUTF8Buffer { line.append(contentsOf: $0) }
        }
        put("{\"method\":")
        JSONWriter.writeString(request.method, into: &line)
        put(",\"path\":")
        JSONWriter.writeString(request.path, into: &line)
        put(",\"status\":")
        line += String(status).utf8
        if let tenant {
            put(",\"tenant\":")
            JSONWriter.writeString(tenant, into: &line)
        }
        if let id = entry.requestID {
            put(",\"request_id\":")
            JSONWriter.writeString(id, into: &line)
        }
        if let outcome = entry.outcome {
            put(",\"outcome\":")
            JSONWriter.writeString(outcome, into: &line)
        }
        if let incomplete = entry.incomplete {
            put(",\"incomplete\":")
            JSONWriter.writeString(incomplete, into: &line)
        }
        put(",\"elapsed_ms\":")
        line += String(elapsed.inMilliseconds).utf8
        put("}\n")
        return line
    }

    // MARK: - Work

    /// What a request's work runs with: its tenant's engine (or the service's), its tenant, its parameters.
    private struct Work: Sendable {
        let enricher: Enricher
        let tenant: Tenant?
        let parameters: Parameters
    }

    private func enrich(_ body: [UInt8], _ work: Work) async -> HTTPResponse {
        let parameters = work.parameters
        let result = await work.enricher.enrich(
            json: body, source: parameters.requestID, deadline: .now + parameters.timeout)
        observe(result, work.tenant)
        var response = HTTPResponse.json(
            result.outcome == .invalid ? 400 : 200, result.line(input: parameters.requestID))
        response.log.outcome = result.outcome.rawValue
        return response
    }

    /// The results of the body's lines, streamed. A line is taken only while the stream has room: a client that
    /// does not read holds its batch (what waits is `responseBufferBytes` and the results of the lines in progress),
    /// and a client that goes cancels it (the lines in progress end `cancelled`, no other line is taken).
    private func enrichLines(_ body: [UInt8], _ work: Work) -> HTTPResponse {
        let (enricher, tenant, parameters) = (work.enricher, work.tenant, work.parameters)
        let lines = LockedValue(
            NDJSONEnrichment.BodyLines(body, limit: enricher.configuration.limits.payload.maximumBytes))
        let stream = ResponseStream(capacity: settings.responseBufferBytes)
        let concurrency = settings.concurrency
        let work = Task {
            var pending: [UInt8] = []
            await NDJSONEnrichment.run(
                enricher: enricher, concurrency: concurrency, timeout: parameters.timeout,
                input: { "\(parameters.requestID):\($0)" },
                next: { await stream.waitForRoom() ? lines.withLock { $0.next() } : nil },
                // A line is at hand whenever the stream has room: taken without a task to read it.
                ready: { stream.hasRoom ? lines.withLock { $0.next() } : nil },
                observe: { self.observe($0, tenant) },
                emit: { pending += $0 },
                flush: {
                    stream.write(pending)
                    pending.removeAll(keepingCapacity: true)
                    return true
                })
            stream.finish()
            self.endWork(tenant)
        }
        stream.onAbandon { work.cancel() }
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/x-ndjson")], body: .stream(stream))
    }

    private func explain(_ body: [UInt8], _ work: Work) async -> HTTPResponse {
        let (enricher, parameters) = (work.enricher, work.parameters)
        let payload: PushPayload
        do {
            payload = try enricher.payload(parsing: body)
        } catch {
            var response = HTTPResponse.json(
                400, JSONWriter.bytes(Explanation.json(input: parameters.requestID, invalid: error)) + [0x0A])
            response.log.outcome = EnrichmentResult.Outcome.invalid.rawValue
            return response
        }
        let explanation = await enricher.explain(payload, deadline: .now + parameters.timeout)
        return .json(200, JSONWriter.bytes(explanation.json(input: parameters.requestID)) + [0x0A])
    }

    /// `POST /v1/preflight`: the preflight of one payload (`Preflight.json`), 200 whether or not it is ready (its
    /// `ready` says); 400 with the problem for a body that is not a payload. Nothing is kept but what publishing
    /// writes, so nothing is served under `/v1/attachments/`.
    private func preflight(_ body: [UInt8], _ work: Work) async -> HTTPResponse {
        let parameters = work.parameters
        let preflight = await work.enricher.preflight(json: body, deadline: .now + parameters.timeout)
        var response = HTTPResponse.json(
            preflight.content == nil ? 400 : 200, JSONWriter.bytes(preflight.json(input: parameters.requestID)) + [0x0A]
        )
        if preflight.content == nil { response.log.outcome = EnrichmentResult.Outcome.invalid.rawValue }
        return response
    }

    /// Counts a result and remembers its attachments: under its tenant, with one (only that tenant may then read
    /// them).
    private func observe(_ result: EnrichmentResult, _ tenant: Tenant?) {
        (tenant?.metrics ?? metrics).record(result)
        (tenant?.attachments ?? attachments).remember(result)
    }

    private func attachment(_ name: String, in attachments: ServedAttachments) -> HTTPResponse {
        guard let (descriptor, entry) = attachments.open(name) else {
            return .error(404, .notFound, "no such attachment")
        }
        return HTTPResponse(
            status: 200, headers: [("Content-Type", entry.mime), ("ETag", "\"\(entry.sha256)\"")],
            body: .file(descriptor: descriptor, size: entry.bytes))
    }

    // MARK: - Checks

    private struct Parameters: Sendable {
        var requestID: String
        var timeout: Duration
        var ndjson: Bool
    }

    /// The request id (empty when the request brings none: `respond(to:)` assigns one), the deadline and the body's
    /// kind, or the 400 saying what is wrong.
    private func parameters(_ request: HTTPRequest, tenant: Tenant?) -> Result<Parameters, Refusal> {
        var timeout = (tenant?.enricher ?? enricher).configuration.timeout
        if let text = request.query["deadline"] {
            // Never beyond the server's deadline.
            guard let requested = Duration.requested(text, within: timeout) else {
                return .failure(
                    Refusal(
                        .error(400, .badParameter, Duration.refusal(ofDeadline: text))))
            }
            timeout = requested
        }
        let requestID: String
        if let given = request.headers["x-request-id"] {
            guard (1...200).contains(given.utf8.count), given.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                return .failure(
                    Refusal(.error(400, .badParameter, "X-Request-Id: expected 1 to 200 visible ASCII characters")))
            }
            requestID = given
        } else {
            requestID = ""
        }
        // NDJSON by its media type; anything else is read as one JSON payload (clients often send none, or a
        // form type by default), and a body that is not one gets its `invalid` result.
        let ndjson = request.hasMediaType("application/x-ndjson") || request.hasMediaType("application/ndjson")
        return .success(Parameters(requestID: requestID, timeout: timeout, ndjson: ndjson))
    }

    /// A response that refuses a request, as an error value.
    private struct Refusal: Error {
        let response: HTTPResponse
        init(_ response: HTTPResponse) { self.response = response }
    }

    /// The routes that take a payload.
    private static let routes: Set<String> = ["/v1/enrich", "/v1/explain", "/v1/preflight"]
    private static let post = ["POST"]
    private static let getOrHead = ["GET", "HEAD"]

    private func only(_ methods: [String], _ request: HTTPRequest) -> HTTPResponse? {
        methods.contains(request.method)
            ? nil
            : .error(
                405, .methodNotAllowed, "\(request.method) is not allowed here",
                headers: [("Allow", methods.joined(separator: ", "))])
    }

    /// Whether the request may use `/v1/`: with `--tenants`, the tenant its bearer token selects (by the token's
    /// SHA-256, compared in constant time with every tenant's); with a token, whether it is that one (compared in
    /// constant time); else yes. 401 when not.
    private func authorized(_ request: HTTPRequest) -> Result<Tenant?, Refusal> {
        let given = request.headers["authorization"].flatMap(Self.bearerCredentials)
        if let tenantTable {
            if let given, !given.isEmpty, let tenant = tenantTable.tenant(byDigest: sha256Digest(of: given)) {
                return .success(tenant)
            }
        } else if let token = settings.token {
            if let given, Self.constantTimeEqual(given, token) { return .success(nil) }
        } else {
            return .success(nil)
        }
        return .failure(
            Refusal(
                .error(
                    401, .unauthorized, "a bearer token is required", headers: [("WWW-Authenticate", "Bearer")])))
    }

    /// The credentials of an `Authorization` value of the Bearer scheme, or nil for another scheme: the scheme's
    /// name is compared without regard to case (RFC 9110 §11.1: `bearer`, `BEARER`), and one or more spaces
    /// separate it from the credentials (§11.4: `auth-scheme 1*SP token68`).
    package static func bearerCredentials(_ value: String) -> [UInt8]? {
        let bytes = Array(value.utf8)
        let scheme = "bearer".utf8
        guard bytes.count > scheme.count,
            zip(bytes, scheme).allSatisfy({ byte, expected in
                ((0x41...0x5A).contains(byte) ? byte | 0x20 : byte) == expected
            }),
            bytes[scheme.count] == 0x20
        else { return nil }
        return Array(bytes[scheme.count...].drop { $0 == 0x20 })
    }

    /// Whether `a` equals `b`, in a time that depends on their lengths only.
    package static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: a.count ^ b.count) | (a.count == b.count ? 0 : 1)
        for index in 0..<max(a.count, b.count) {
            difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
        }
        return difference == 0
    }

    /// 503, with `full` because every slot is taken, else because the service is draining.
    private func busy(full: Bool) -> HTTPResponse {
        let retry = [("Retry-After", String(settings.retryAfterSeconds))]
        return full
            ? .error(
                503, .tooManyInFlight, "\(settings.maximumInFlight) requests are in process; retry later",
                headers: retry)
            : .error(503, .draining, "the service is draining", headers: retry)
    }

    /// A request's work has ended: its slot, and its tenant's, are free.
    private func endWork(_ tenant: Tenant?) {
        admission.leave()
        tenant?.admission.leave()
    }
}
