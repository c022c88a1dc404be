/// Why a payload would, or would not, get its attachments: which conventions matched, each reference they
/// found, and for each whether it would be attached, from its headers and first bytes only (nothing stored).
public struct Explanation: Sendable {
    /// What would happen to one reference.
    public enum Verdict: Sendable, Hashable {
        /// It would be attached as this type; `bytes` is the declared length when the server gave one.
        case attach(MediaType, bytes: Int?)
        /// It would not be attached, for this reason.
        case refuse(EnrichmentProblem.Code, String)
        /// Its fetch failed in a way `enrich` tries again (`RetryPolicy`: a refused or dropped connection, a
        /// connect timeout, 429, 502, 503, 504), up to `retries` more times while the deadline leaves room: whether it
        /// is attached depends on those attempts, which explain does not make.
        case retry(EnrichmentProblem.Code, String, retries: Int)
        /// An earlier convention found the same URL; it is fetched once, for that one.
        case duplicate(of: String)
        /// Past the per-payload limit: it would not be fetched.
        case beyondLimit
    }

    /// One reference and its verdict.
    public struct Finding: Sendable {
        public var reference: MediaReference
        public var verdict: Verdict
    }

    /// One convention: what it found, and the fields it could not read.
    public struct ConventionReport: Sendable {
        public var name: String
        public var findings: [Finding]
        public var problems: [EnrichmentProblem]
        /// Whether the convention found anything (a reference or an unreadable field).
        public var matched: Bool { !findings.isEmpty || !problems.isEmpty }
    }

    /// Whether `aps.mutable-content` is 1 (else iOS would not run the extension at all); for an FCM message, its
    /// `apns.payload.aps.mutable-content`.
    public var mutable: Bool
    /// What the input was read as, and what decided it.
    public var format: PayloadFormat
    /// Every convention, in the order they run.
    public var conventions: [ConventionReport]

    /// The explanation as JSON, for machines (`richpush explain --json`).
    public func json(input: String) -> PushPayload.JSON {
        .object(
            JSONObject([
                ("input", .text(input)),
                ("format", format.json),
                ("mutable", .bool(mutable)),
                (
                    "conventions",
                    .array(
                        conventions.filter(\.matched).map { report in
                            .object(
                                JSONObject([
                                    ("name", .text(report.name)),
                                    ("references", .array(report.findings.map(Self.json))),
                                    (
                                        "problems",
                                        .array(
                                            report.problems.map(\.json))
                                    ),
                                ]))
                        })
                ),
                ("unmatched", .array(conventions.filter { !$0.matched }.map { .text($0.name) })),
            ]))
    }

    private static func json(_ finding: Finding) -> PushPayload.JSON {
        var members: [(key: String, value: PushPayload.JSON)] = [
            ("identifier", .text(finding.reference.identifier)),
            ("field", .text(finding.reference.field)),
            ("url", .text(finding.reference.url)),
            ("platform", .text(finding.reference.platform.rawValue)),
        ]
        switch finding.verdict {
        case .attach(let type, let bytes):
            members += [("verdict", .text("attach")), ("type", .text(type.uti))]
            if let bytes { members.append(("bytes", .integer(bytes))) }
            // An image iOS does not attach is fetched only to be transcoded (the transformation is on).
            if !type.isAttachable { members.append(("transcoded", .bool(true))) }
        case .refuse(let code, let detail):
            members += [("verdict", .text("refuse")), ("code", .text(code.rawValue)), ("detail", .text(detail))]
        case .retry(let code, let detail, let retries):
            members += [
                ("verdict", .text("retry")), ("code", .text(code.rawValue)), ("detail", .text(detail)),
                ("retries", .integer(retries)),
            ]
        case .duplicate(let identifier):
            members += [("verdict", .text("duplicate")), ("of", .text(identifier))]
        case .beyondLimit:
            members += [
                ("verdict", .text("not-fetched")), ("code", .text(EnrichmentProblem.Code.tooManyReferences.rawValue)),
            ]
        }
        return .object(JSONObject(members))
    }

    /// The explanation for a person (`richpush explain`).
    public func text(input: String) -> String {
        let fcm = format.name == .fcmV1
        var lines = [fcm ? "\(input) (an FCM v1 message, decided by \(format.decidedBy))" : input]
        let field =
            fcm ? (format.wrapped ? "message." : "") + "apns.payload.aps.mutable-content" : "aps.mutable-content"
        lines.append(
            mutable
                ? "  \(field) is 1: the service extension runs"
                : "  \(field) is not 1: on iOS the service extension would not run at all")
        let matched = conventions.filter(\.matched)
        if matched.isEmpty { lines.append("  no convention found a media reference: nothing to attach") }
        for report in matched {
            lines.append("  \(report.name):")
            for finding in report.findings {
                let platform = fcm ? " (\(finding.reference.platform.rawValue))" : ""
                lines.append("    \(finding.reference.field)\(platform) \(Self.shown(finding.reference.url))")
                switch finding.verdict {
                case .attach(let type, let bytes):
                    let transcoded = type.isAttachable ? "" : " transcoded to JPEG or PNG from"
                    lines.append(
                        "      would attach\(transcoded): \(type.uti)" + (bytes.map { ", \($0) bytes" } ?? ""))
                case .refuse(let code, let detail):
                    lines.append("      would NOT attach: \(code) (\(detail))")
                case .retry(let code, let detail, let retries):
                    lines.append(
                        "      failed now: \(code) (\(detail)); enrich tries again, up to \(retries) "
                            + "times while the deadline leaves room")
                case .duplicate(let identifier):
                    lines.append("      same URL as \(identifier): fetched once")
                case .beyondLimit:
                    lines.append("      would NOT be fetched: beyond the per-payload limit")
                }
            }
            for problem in report.problems {
                lines.append("    \(problem.source): \(problem.code) (\(problem.detail))")
            }
        }
        let unmatched = conventions.filter { !$0.matched }.map(\.name)
        if !unmatched.isEmpty { lines.append("  not present: " + unmatched.joined(separator: ", ")) }
        // Each element is one line: what the payload or an origin put in one is escaped, never a line of its own.
        return lines.map(TerminalText.printable).joined(separator: "\n") + "\n"
    }

    /// How many characters of a URL the text shows; the JSON has it whole.
    static let shownURLCharacters = 300

    /// `url` for a person: whole up to `shownURLCharacters`, else its start and its length (a URL the fetch refuses
    /// as too long, 2,048 bytes by default, can be as long as the payload, and each convention that finds it shows
    /// it again).
    static func shown(_ url: String) -> String {
        guard url.utf8.count > shownURLCharacters, url.count > shownURLCharacters else { return url }
        return url.prefix(shownURLCharacters - 60) + "... (\(url.utf8.count) bytes in all)"
    }
}

extension Enricher {
    /// Explains what `enrich` would do with `payload`: every convention, every reference, and for each whether
    /// it would be attached, judged from its headers and first bytes (fetched now, under `deadline`; nothing is
    /// stored).
    public func explain(_ payload: PushPayload, deadline: ContinuousClock.Instant) async -> Explanation {
        var reports: [Explanation.ConventionReport] = []
        var seen: [MediaReference.Key: String] = [:]
        var fetchCount = 0
        var toProbe: [(report: Int, finding: Int, reference: MediaReference)] = []
        // An FCM message: its own fields first (`fcm_v1`, iOS's then Android's), then each convention inside
        // `apns.payload`; an APNs payload: each convention over the payload.
        let format = PayloadFormat.detect(payload)
        let message = FCMMessage(payload, format: format)
        let scans: [(name: String, scan: ConventionScan)]
        if let message {
            let own = message.ownScans()
            var scan = own.ios
            scan.takeProblems(of: own.android)
            scan.references += own.android.references
            scans = [(FCMMessage.convention, scan)] + message.conventionScans(with: configuration.conventions)
        } else {
            scans = configuration.conventions.conventions.map { ($0.name, $0.scan(payload)) }
        }
        for (name, scan) in scans {
            var findings: [Explanation.Finding] = []
            for reference in scan.references {
                if let first = seen[reference.key] {
                    findings.append(.init(reference: reference, verdict: .duplicate(of: first)))
                    continue
                }
                seen[reference.key] = reference.identifier
                if fetchCount >= configuration.limits.maximumReferences {
                    findings.append(.init(reference: reference, verdict: .beyondLimit))
                    continue
                }
                fetchCount += 1
                toProbe.append((reports.count, findings.count, reference))
                findings.append(.init(reference: reference, verdict: .refuse(.expired, "not probed")))
            }
            reports.append(.init(name: name, findings: findings, problems: scan.listedProblems))
        }
        let verdicts = await withTaskGroup(of: (Int, Explanation.Verdict).self) { group in
            for (index, item) in toProbe.enumerated() {
                group.addTask {
                    switch await self.probe(item.reference.url, deadline: deadline) {
                    case .success(let found) where item.reference.platform == .android && found.type.kind != .image:
                        return (index, .refuse(.unsupportedType, AndroidVariant.noImage(found.type)))
                    case .success(let found):
                        // By enrich's rule for what a file declares (a GIF's logical screen, an APNG's frames, a
                        // JPEG's or PNG's size), as far as the first bytes go.
                        if let declared = found.declared, let refusal = self.fetcher.pixelRefusal(declared: declared) {
                            return (index, .refuse(refusal.code, refusal.detail))
                        }
                        return (index, .attach(found.type, bytes: found.bytes))
                    case .failure(let failure):
                        let retry = self.configuration.retry
                        if case .retry = retry.decision(
                            after: failure, attempt: 1, url: item.reference.url, now: .now, deadline: deadline)
                        {
                            return (index, .retry(failure.code, failure.detail, retries: retry.retries))
                        }
                        return (index, .refuse(failure.code, failure.detail))
                    }
                }
            }
            return await group.reduce(into: [Int: Explanation.Verdict]()) { $0[$1.0] = $1.1 }
        }
        for (index, item) in toProbe.enumerated() {
            if let verdict = verdicts[index] { reports[item.report].findings[item.finding].verdict = verdict }
        }
        let mutable = message.map { $0.apnsPayload?.isMutable == true } ?? payload.isMutable
        return Explanation(mutable: mutable, format: format, conventions: reports)
    }
}
