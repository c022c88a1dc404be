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
        /// For an Android reference attached as a variant made from it (a still JPEG or PNG within FCM's limits,
        /// `AndroidVariant`), why it is made; nil when it would be attached as it is, or not at all.
        public var androidVariant: [String]?
        /// The verdict on the reference's fallback (Swrve's `fallback_url`, which `enrich` fetches when the URL
        /// fails), when it has one and the URL would not be attached; nil otherwise.
        public var fallback: Verdict?

        /// Whether it would be attached for iOS as a JPEG or PNG made from a type iOS does not attach.
        var transcodedForIOS: Bool {
            guard case .attach(let type, _) = verdict else { return false }
            return reference.platform == .ios && !type.isAttachable
        }
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
    /// Whether iOS would show it with an alert (`aps.alert`; an FCM message's `notification` title or body too): the
    /// extension runs only for a notification that shows one.
    public var alert: Bool = true
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
                ("mutable", .bool(mutable)), ("alert", .bool(alert)),
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
        members += verdictMembers(finding.verdict, finding: finding)
        if let fallback = finding.fallback, let reference = finding.reference.fallback {
            let fields: [(key: String, value: PushPayload.JSON)] = [
                ("field", .text(reference.field)), ("url", .text(reference.url)),
            ]
            members.append(("fallback", .object(JSONObject(fields + verdictMembers(fallback, finding: nil)))))
        }
        return .object(JSONObject(members))
    }

    /// A verdict's members: `verdict` and what goes with it (the type, the code and detail); `finding`'s own
    /// notes on an attachment (transcoded, an Android variant) when given.
    private static func verdictMembers(
        _ verdict: Verdict, finding: Finding?
    ) -> [(key: String, value: PushPayload.JSON)] {
        var members: [(key: String, value: PushPayload.JSON)] = []
        switch verdict {
        case .attach(let type, let bytes):
            members += [("verdict", .text("attach")), ("type", .text(type.uti))]
            if let bytes { members.append(("bytes", .integer(bytes))) }
            // An image iOS does not attach is fetched only to be transcoded (the transformation is on).
            if finding?.transcodedForIOS ?? !type.isAttachable {
                members.append(("transcoded", .bool(true)))
            }
            if let reasons = finding?.androidVariant {
                members.append(("android_variant", .array(reasons.map { .text($0) })))
            }
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
        return members
    }

    /// The explanation for a person (`richpush explain`).
    public func text(input: String) -> String {
        let fcm = format.name == .fcmV1
        var lines = [fcm ? "\(input) (an FCM v1 message, decided by \(format.decidedBy))" : input]
        let field =
            fcm ? (format.wrapped ? "message." : "") + "apns.payload.aps.mutable-content" : "aps.mutable-content"
        let forIOS = conventions.contains { $0.findings.contains { $0.reference.platform == .ios } }
        if mutable, !alert, forIOS {
            let missing = fcm ? "no message.notification title or body, no apns.payload.aps.alert" : "no aps.alert"
            lines.append(
                "  \(field) is 1, but there is no alert (\(missing)): iOS runs no service extension without one")
        } else if mutable {
            lines.append("  \(field) is 1: the service extension runs")
        } else if fcm && !forIOS {
            lines.append("  \(field) is not 1, and nothing is for iOS: no matter")
        } else {
            lines.append("  \(field) is not 1: on iOS the service extension would not run at all")
        }
        let matched = conventions.filter(\.matched)
        if matched.isEmpty { lines.append("  no convention found a media reference: nothing to attach") }
        for report in matched {
            lines.append("  \(report.name):")
            for finding in report.findings {
                let platform = fcm ? " (\(finding.reference.platform.rawValue))" : ""
                lines.append("    \(finding.reference.field)\(platform) \(Self.shown(finding.reference.url))")
                lines.append("      " + Self.verdictText(finding.verdict, finding: finding))
                if let fallback = finding.fallback, let reference = finding.reference.fallback {
                    lines.append(
                        "      its fallback \(reference.field) \(Self.shown(reference.url)), fetched when it fails: "
                            + Self.verdictText(fallback, finding: nil))
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

    /// A verdict for a person; `finding`'s own notes on an attachment (transcoded, an Android variant) when given.
    private static func verdictText(_ verdict: Verdict, finding: Finding?) -> String {
        switch verdict {
        case .attach(let type, let bytes):
            let size = bytes.map { ", \($0) bytes" } ?? ""
            if let reasons = finding?.androidVariant {
                return "would attach a variant (a still JPEG or PNG) made from: \(type.uti)\(size), for "
                    + reasons.joined(separator: "; ")
            }
            let transcoded =
                (finding?.transcodedForIOS ?? !type.isAttachable) ? " transcoded to JPEG or PNG from" : ""
            return "would attach\(transcoded): \(type.uti)\(size)"
        case .refuse(let code, let detail):
            return "would NOT attach: \(code) (\(detail))"
        case .retry(let code, let detail, let retries):
            return "failed now: \(code) (\(detail)); enrich tries again, up to \(retries) "
                + "times while the deadline leaves room"
        case .duplicate(let identifier):
            return "same URL as \(identifier): fetched once"
        case .beyondLimit:
            return "would NOT be fetched: beyond the per-payload limit"
        }
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
    /// it would be attached, judged from its headers and first bytes (fetched now, under `deadline`, once a URL;
    /// nothing is stored).
    public func explain(_ payload: PushPayload, deadline: ContinuousClock.Instant) async -> Explanation {
        var reports: [Explanation.ConventionReport] = []
        var seen: [MediaReference.Key: String] = [:]
        // Where each URL's first finding is, and the findings with a fallback (an earlier convention's finding of
        // the same URL has it in `enrich`, which merges them).
        var firsts: [MediaReference.Key: (report: Int, finding: Int)] = [:]
        var withFallback: [(report: Int, finding: Int, reference: MediaReference)] = []
        var fetchCount = 0
        var toProbe: [(report: Int, finding: Int, reference: MediaReference)] = []
        // In the order `enrich` takes them, which decides what is past the per-payload limit: an FCM message's
        // iOS field (`fcm_v1`), each convention inside `apns.payload`, then its Android field (`FCMMessage.scan`);
        // an APNs payload's conventions in their order.
        let format = PayloadFormat.detect(payload)
        let message = FCMMessage(payload, format: format)
        var scans: [(name: String, scan: ConventionScan)]
        if let message {
            let own = message.ownScans()
            scans = [(FCMMessage.convention, own.ios)] + message.conventionScans(with: configuration.conventions)
            scans.append((FCMMessage.convention, own.android))
        } else {
            scans = configuration.conventions.conventions.map { ($0.name, $0.scan(payload)) }
        }
        // The identifiers `enrich` gives, which merges every convention's references in this order (a second
        // `adb_media` is `adb_media-2`).
        var merged = ConventionScan()
        for (_, scan) in scans { merged.merge(scan.references) }
        var identifiers: [MediaReference.Key: String] = [:]
        for reference in merged.references where identifiers[reference.key] == nil {
            identifiers[reference.key] = reference.identifier
        }
        for (position, (name, scan)) in scans.enumerated() {
            // An FCM message's Android field, last, adds to its first report: `fcm_v1` shows iOS's, then Android's.
            let report = message != nil && position == scans.count - 1 ? 0 : reports.count
            if report == reports.count { reports.append(.init(name: name, findings: [], problems: [])) }
            reports[report].problems += scan.listedProblems
            for var reference in scan.references {
                if seen[reference.key] == nil {
                    reference.identifier = identifiers[reference.key] ?? reference.identifier
                }
                var verdict = Explanation.Verdict.refuse(.expired, "not probed")
                if reference.fallback != nil {
                    withFallback.append((report, reports[report].findings.count, reference))
                }
                if let first = seen[reference.key] {
                    verdict = .duplicate(of: first)
                } else {
                    seen[reference.key] = reference.identifier
                    firsts[reference.key] = (report, reports[report].findings.count)
                    if fetchCount >= configuration.limits.maximumReferences {
                        verdict = .beyondLimit
                    } else {
                        fetchCount += 1
                        toProbe.append((report, reports[report].findings.count, reference))
                    }
                }
                reports[report].findings.append(.init(reference: reference, verdict: verdict))
            }
        }
        // Each URL is probed once, whatever the platforms and conventions naming it.
        var probes = await probes(of: toProbe.map(\.reference.url), deadline: deadline)
        for item in toProbe {
            guard let probed = probes[ExactString(item.reference.url)] else { continue }
            let (verdict, variant) = self.verdict(probed, for: item.reference, deadline: deadline)
            reports[item.report].findings[item.finding].verdict = verdict
            reports[item.report].findings[item.finding].androidVariant = variant
        }
        // A fallback is fetched when its URL fails (Swrve's `fallback_url`): probed then, once its URL's verdict is
        // known, on the finding that names it.
        var fallbacks: [(report: Int, finding: Int, reference: MediaReference)] = []
        for item in withFallback {
            guard let first = firsts[item.reference.key], let fallback = item.reference.fallback else { continue }
            switch reports[first.report].findings[first.finding].verdict {
            case .refuse, .retry:
                var reference = item.reference
                reference.url = fallback.url
                reference.fallback = nil
                fallbacks.append((item.report, item.finding, reference))
            default: continue
            }
        }
        let more = fallbacks.map(\.reference.url).filter { probes[ExactString($0)] == nil }
        if !more.isEmpty { probes.merge(await self.probes(of: more, deadline: deadline)) { first, _ in first } }
        for item in fallbacks {
            guard let probed = probes[ExactString(item.reference.url)] else { continue }
            reports[item.report].findings[item.finding].fallback =
                self.verdict(probed, for: item.reference, deadline: deadline).0
        }
        let mutable = message.map { $0.apnsPayload?.isMutable == true } ?? payload.isMutable
        var explanation = Explanation(mutable: mutable, format: format, conventions: reports)
        explanation.alert = EnrichmentRun.showsAlert(payload, message: message)
        return explanation
    }

    /// The probe of each of `urls`, each once, at once.
    private func probes(
        of urls: [String], deadline: ContinuousClock.Instant
    ) async -> [ExactString: Result<Fetcher.Probed, FetchFailure>] {
        var unique: [ExactString: String] = [:]
        for url in urls where unique[ExactString(url)] == nil { unique[ExactString(url)] = url }
        return await withTaskGroup(of: (ExactString, Result<Fetcher.Probed, FetchFailure>).self) { group in
            for (key, url) in unique {
                group.addTask { (key, await self.probe(url, deadline: deadline)) }
            }
            return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
    }

    /// The verdict on `reference` from its URL's probe, and for an Android reference attached as a variant made
    /// from it, why the variant is made.
    private func verdict(
        _ probed: Result<Fetcher.Probed, FetchFailure>, for reference: MediaReference,
        deadline: ContinuousClock.Instant
    ) -> (Explanation.Verdict, [String]?) {
        switch probed {
        case .success(let found):
            // By enrich's rule for what a file declares (a GIF's logical screen, an APNG's frames, a JPEG's or PNG's
            // size), as far as the first bytes go.
            if let declared = found.declared, let refusal = fetcher.pixelRefusal(declared: declared) {
                return (.refuse(refusal.code, refusal.detail), nil)
            }
            // A HEIC's or AVIF's coded frames, where its first bytes hold them (its `ispe` may say less).
            if let refusal = found.codedPixelRefusal {
                return (.refuse(refusal.code, refusal.detail), nil)
            }
            guard reference.platform == .android else { return (.attach(found.type, bytes: found.bytes), nil) }
            // What `enrich` makes of it for Android (`androidVariant(of:deadline:)`), from what the first bytes show.
            let variant = AndroidVariant(maximumDimension: configuration.transform.androidMaximumDimension)
            let size = found.declared.map { ImageSize(width: $0.width, height: $0.height) }
            let decision = variant.decision(
                type: found.type, bytes: found.bytes, dimensions: size, head: found.head, whole: false)
            switch decision {
            case .keep:
                return (.attach(found.type, bytes: found.bytes), nil)
            case .refuse(let failure):
                return (.refuse(failure.code, failure.detail), nil)
            case .convert(let reasons):
                guard fetcher.converts else {
                    let refusal = variant.refusal(bytes: found.bytes, dimensions: size, reasons: reasons)
                    return (.refuse(refusal.code, refusal.detail), nil)
                }
                return (.attach(found.type, bytes: found.bytes), reasons)
            }
        case .failure(let failure):
            let retry = configuration.retry
            if case .retry = retry.decision(
                after: failure, attempt: 1, url: reference.url, now: .now, deadline: deadline)
            {
                return (.retry(failure.code, failure.detail, retries: retry.retries), nil)
            }
            return (.refuse(failure.code, failure.detail), nil)
        }
    }
}
