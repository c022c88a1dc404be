import RichPush

/// One app served by a `serve --tenants` process: its token's digest, its own engine (its configuration, over the
/// service's shared fetch loop), its bounds, and what it stored. A request's token selects it; the request then runs
/// under this tenant from its headers to its end, even when a reload replaces it meanwhile.
package final class Tenant: Sendable {
    /// What the tenants file says of one tenant, checked: everything the service needs to make it.
    package struct Definition: Sendable {
        /// Its name: the access log's and the metrics' `tenant`.
        package var name: String
        /// The SHA-256 of its bearer token, 32 bytes.
        package var tokenSHA256: [UInt8]
        /// Its engine's configuration: the server's, with the tenant's overrides.
        package var configuration: Enricher.Configuration
        /// The most of its requests admitted at once; nil for no bound of its own (the server's holds).
        package var maximumInFlight: Int?
        /// Its request rate; nil for none.
        package var rate: TokenBucket.Rate?
        /// What the definition was read from (its entry in the file, with the server's options): a reload keeps the
        /// tenant (its engine, media cache and bounds) when this has not changed.
        package var source: [UInt8]

        package init(
            name: String, tokenSHA256: [UInt8], configuration: Enricher.Configuration, maximumInFlight: Int?,
            rate: TokenBucket.Rate?, source: [UInt8]
        ) {
            self.name = name
            self.tokenSHA256 = tokenSHA256
            self.configuration = configuration
            self.maximumInFlight = maximumInFlight
            self.rate = rate
            self.source = source
        }
    }

    package let definition: Definition
    package var name: String { definition.name }
    /// The SHA-256 of its token, as four words (compared with every request's, for every tenant).
    let tokenDigest: Digest
    /// Its engine, sharing the service's fetch loop.
    package let enricher: Enricher
    /// Its requests admitted, from their headers to the end of their work (`max_in_flight`, when it has one).
    /// Kept across reloads while its bound is the same: the requests it admitted go on counting.
    let admission: WorkGate
    /// Its rate, when it has one; kept across reloads while the rate is the same.
    let bucket: LockedValue<TokenBucket>?
    /// Its payloads' outcomes, problems and durations (by name: kept across reloads).
    let metrics: ServiceMetrics
    /// What was stored for it: all `GET /v1/attachments/...` serves it (by name: kept across reloads).
    let attachments: ServedAttachments
    /// Its requests refused with 429, by code (by name: kept across reloads).
    let rejections: TenantRejections

    /// A tenant of `definition`; its admission gate and rate bucket are `kept` (the tenant's before a reload, when
    /// its bounds are the same), else new.
    init(
        _ definition: Definition, enricher: Enricher, metrics: ServiceMetrics, attachments: ServedAttachments,
        rejections: TenantRejections, kept: Tenant? = nil
    ) {
        self.definition = definition
        // 32 bytes: the tenants file gives 64 hex digits (a definition made otherwise with a wrong count matches no
        // token: all zeros is no SHA-256 anyone can find a token for).
        tokenDigest = Digest(bytes: definition.tokenSHA256) ?? Digest(bytes: [UInt8](repeating: 0, count: 32))!
        self.enricher = enricher
        if let kept, kept.definition.maximumInFlight == definition.maximumInFlight {
            admission = kept.admission
        } else {
            admission = WorkGate(limit: definition.maximumInFlight)
        }
        if let kept, kept.definition.rate == definition.rate {
            bucket = kept.bucket
        } else {
            bucket = definition.rate.map { LockedValue(TokenBucket($0, now: .now)) }
        }
        self.metrics = metrics
        self.attachments = attachments
        self.rejections = rejections
    }

    /// Takes one request from its rate: nil when it may go, else how long until it may.
    func takeFromRate(at now: ContinuousClock.Instant = .now) -> Duration? {
        bucket?.withLock { $0.take(at: now) }
    }
}

/// A tenant's 429s, by code.
final class TenantRejections: Sendable {
    private let counts = LockedValue<[String: Int]>([:])

    func record(_ code: EnrichmentProblem.Code) { counts.withLock { $0[code.rawValue, default: 0] += 1 } }

    var snapshot: [String: Int] { counts.withLock { $0 } }
}

/// A token bucket: `burst` requests at once, refilled at `perSecond`. A value without I/O or lock, tested alone.
package struct TokenBucket: Sendable {
    /// A tenant's `rate`: `{"per_second": ..., "burst": ...}`.
    package struct Rate: Sendable, Equatable {
        /// Requests a second, on average; more than 0.
        package var perSecond: Double
        /// Requests that may come at once after a quiet spell; at least 1.
        package var burst: Int

        package init(perSecond: Double, burst: Int) {
            self.perSecond = perSecond
            self.burst = burst
        }
    }

    /// The longest wait `take` says: a year (in seconds).
    static let longestWait = 365.0 * 86_400

    let rate: Rate
    private var tokens: Double
    private var updated: ContinuousClock.Instant

    /// A full bucket at `now`.
    init(_ rate: Rate, now: ContinuousClock.Instant) {
        self.rate = rate
        tokens = Double(rate.burst)
        updated = now
    }

    /// Takes a token at `now`: nil when one was there, else the wait until one will be (nothing is taken then).
    mutating func take(at now: ContinuousClock.Instant) -> Duration? {
        if now > updated {
            tokens = min(Double(rate.burst), tokens + (now - updated).inSeconds * rate.perSecond)
            updated = now
        }
        if tokens >= 1 {
            tokens -= 1
            return nil
        }
        // At most a year: a rate made in code below the tenants file's least would overflow Duration.
        return .seconds(min((1 - tokens) / rate.perSecond, Self.longestWait))
    }
}

/// The tenants a service serves now, and what each keeps by name across reloads (metrics, attachments, 429 counts).
final class TenantTable: Sendable {
    private struct State {
        var tenants: [Tenant] = []
        var metrics: [String: ServiceMetrics] = [:]
        var attachments: [String: ServedAttachments] = [:]
        var rejections: [String: TenantRejections] = [:]
    }

    private let state = LockedValue(State())
    /// The engine whose fetch loop every tenant's shares.
    private let base: Enricher

    init(base: Enricher) { self.base = base }

    /// The tenants now, in the file's order.
    var tenants: [Tenant] { state.withLock { $0.tenants } }

    /// The tenant whose token's SHA-256 is `digest`, or nil. Every tenant's digest is compared, each in constant
    /// time, whatever matches: how long this takes says nothing of which token, or how much of one, was right. As
    /// four words each, not 32 bytes: a byte loop over 100 tenants cost a few microseconds a request.
    func tenant(byDigest digest: [UInt8]) -> Tenant? {
        guard let digest = Digest(bytes: digest) else { return nil }
        let tenants = state.withLock { $0.tenants }
        var found: Tenant? = nil
        for tenant in tenants where tenant.tokenDigest.isSame(as: digest) { found = tenant }
        return found
    }

    /// Replaces the tenants with `definitions`: a tenant whose definition has not changed is kept as it is (its
    /// engine and media cache); another gets a new engine, and keeps its admission gate and rate bucket while those
    /// bounds are the same. Requests in flight keep the tenant they started with. What is kept by name of a tenant
    /// no longer defined (its metrics, attachments, 429 counts) is let go: a new tenant given the name later starts
    /// afresh, serving nothing stored for the old one.
    /// - Throws: what making an engine throws (nothing is replaced then).
    func replace(with definitions: [Tenant.Definition]) throws {
        let current = Dictionary(state.withLock { $0.tenants }.map { ($0.name, $0) }, uniquingKeysWith: { $1 })
        var made: [Tenant] = []
        for definition in definitions {
            let previous = current[definition.name]
            if let previous, previous.definition.source == definition.source {
                made.append(previous)
                continue
            }
            let enricher = try Enricher(configuration: definition.configuration, sharingLoopOf: base)
            let name = definition.name
            let root = base.configuration.store.root
            let (metrics, attachments, rejections) = state.withLock { state in
                let metrics = state.metrics[name] ?? ServiceMetrics()
                let attachments = state.attachments[name] ?? ServedAttachments(root: root)
                let rejections = state.rejections[name] ?? TenantRejections()
                state.metrics[name] = metrics
                state.attachments[name] = attachments
                state.rejections[name] = rejections
                return (metrics, attachments, rejections)
            }
            made.append(
                Tenant(
                    definition, enricher: enricher, metrics: metrics, attachments: attachments, rejections: rejections,
                    kept: previous))
        }
        let names = Set(definitions.map(\.name))
        state.withLock { state in
            state.tenants = made
            state.metrics = state.metrics.filter { names.contains($0.key) }
            state.attachments = state.attachments.filter { names.contains($0.key) }
            state.rejections = state.rejections.filter { names.contains($0.key) }
        }
    }
}
