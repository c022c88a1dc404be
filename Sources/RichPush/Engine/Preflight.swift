/// What each phone will show of a payload's media, checked before a campaign is sent: every reference downloaded
/// and transformed completely (unlike `explain`, which reads headers and first bytes), with a verdict per platform,
/// and, with publishing on, the payload ready to send (every media URL replaced by its validated published copy).
///
/// Made by `Enricher.preflight(_:deadline:)`; nothing is kept but what publishing writes (the attachments made to
/// judge are removed before it returns).
public struct Preflight: Sendable {
    /// One reference for one platform.
    public struct Verdict: Sendable, Hashable {
        /// What the phone gets.
        public enum Outcome: Sendable, Hashable {
            /// The media as sent.
            case attached
            /// The media after these steps (the attachment's `transformed`).
            case transformed([Transformation.Step])
            /// Nothing: the code and detail say why.
            case refused(EnrichmentProblem.Code, String)
        }

        /// The key path of the field that names it.
        public var field: String
        /// The URL, as the payload gives it.
        public var source: String
        /// The platform it is for.
        public var platform: DevicePlatform
        /// The convention that found it.
        public var convention: String
        /// What the phone gets.
        public var outcome: Outcome
        /// What is attached, when something is: its type, bytes, dimensions (when known) and published URL.
        public var media: FetchedMedia?
        /// What else was found about it (a damaged image, a type the payload declared wrongly, a failed
        /// publication), each a problem of the result.
        public var notes: [EnrichmentProblem]

        /// Whether the URL's path has no file extension (`https://cdn/img?id=7`). Apple's notification service
        /// extension samples and FCM's iOS documentation name the downloaded file after it, so an extension that
        /// trusts the URL attaches nothing; RichPush names files by their bytes, and says so.
        public var lacksExtension: Bool { Self.lacksExtension(source) }

        /// The type the fetched bytes were (before any transformation), when something is attached.
        public var fetchedType: MediaType? { media.map { $0.transformation?.original.type ?? $0.type } }

        /// Whether the Content-Type the origin sent names the type the bytes are (its media type, parameters
        /// ignored, case-insensitive); nil when nothing is attached or the fetch's provenance is not known. An origin
        /// that sends none disagrees: a service extension that trusts the header attaches nothing.
        public var contentTypeAgrees: Bool? {
            guard let fetchedType, let provenance = media?.provenance else { return nil }
            guard let sent = provenance.contentType else { return false }
            let essence = sent.split(separator: ";", maxSplits: 1).first.map(String.init) ?? sent
            return essence.trimmingSpaces.lowercased() == fetchedType.mime
        }

        /// Whether the phone gets anything.
        public var reaches: Bool {
            if case .refused = outcome { return false }
            return true
        }

        static func lacksExtension(_ url: String) -> Bool {
            var rest = Substring(url)
            if let colon = rest.firstIndex(of: ":"), rest[colon...].hasPrefix("://") {
                rest = rest[rest.index(colon, offsetBy: 3)...]
            }
            rest = rest.prefix { $0 != "?" && $0 != "#" }
            guard let slash = rest.firstIndex(of: "/") else { return true }
            let last = rest[slash...].split(separator: "/").last ?? ""
            guard let dot = last.lastIndex(of: ".") else { return true }
            let suffix = last[last.index(after: dot)...]
            return suffix.isEmpty || suffix.count > 5 || !suffix.allSatisfy { $0.isLetter || $0.isNumber }
        }
    }

    /// What the input was read as.
    public var format: PayloadFormat?
    /// One verdict per reference and platform, in reference order.
    public var verdicts: [Verdict]
    /// The problems of the payload itself: fields that hold no usable URL, `not-mutable`, references beyond the
    /// limit (a problem of a reference is in its verdict).
    public var problems: [EnrichmentProblem]
    /// The payload as it would be sent: with publishing on, every media URL replaced by its published copy; else
    /// the input as it came (no override applied, no list of local files). Nil for an input that is not a payload.
    public var content: PushPayload?
    /// How long it took.
    public var elapsed: Duration

    /// The payload problems that keep media from a phone: with them, `ready` is false however the references ended.
    static let blocking: Set<EnrichmentProblem.Code> = [.notMutable, .noAlert, .badReference, .tooManyReferences]

    /// Whether every reference will reach every platform it targets: each verdict reaches, and no payload problem
    /// stands in the way (`not-mutable`: iOS would not run the extension; a field holding no URL; references
    /// beyond the limit).
    public var ready: Bool {
        content != nil && verdicts.allSatisfy(\.reaches) && !problems.contains { Self.blocking.contains($0.code) }
            && unfetched == 0
    }

    /// References found and not fetched, counted even past the problems' cap (a field holding no URL after 64
    /// listed problems is only counted in `too-many-problems`; `ready` had said yes).
    let unfetched: Int

    /// The verdicts of `result`, whose references are `references` (as the run found them), `unfetched` more not
    /// fetched.
    init(references: [MediaReference], unfetched: Int, result: EnrichmentResult) {
        self.unfetched = unfetched
        format = result.format
        content = result.content
        elapsed = result.elapsed
        var problems = result.problems
        verdicts = references.map { reference in
            let mine = { (problem: EnrichmentProblem) in
                ExactString.same(problem.source, reference.url)
                    && (problem.platform == nil || problem.platform == reference.platform)
            }
            let notes = problems.filter(mine)
            problems.removeAll(where: mine)
            let attachment = result.attachments.first { $0.identifier == reference.identifier }
            var outcome: Verdict.Outcome
            // What else is known of it: every problem when it attached, all but the refusal's when it did not.
            var kept = notes
            switch (attachment, notes.first) {
            case (let attachment?, _):
                let steps = attachment.media.transformation?.steps ?? []
                outcome = steps.isEmpty ? .attached : .transformed(steps)
                // Publishing failed: the payload to send keeps the sender's URL, and a phone gets its media as it
                // is, which it cannot use when it had to be transcoded or downscaled (a WebP on iOS), or, on
                // Android, made within FCM's 1 MiB (a variant re-encoded smaller says only metadata-stripped: the
                // phone was told ok and got the original, which FCM refuses).
                var needed = steps.filter { $0 == .transcoded || $0 == .downscaled }.map(\.rawValue)
                if reference.platform == .android, let original = attachment.media.transformation?.original,
                    original.bytes > AndroidVariant.maximumBytes
                {
                    needed.append(
                        "\(original.bytes) bytes made within FCM's Android limit of \(AndroidVariant.maximumBytes)")
                }
                if let failed = notes.first(where: { $0.code == .publishFailed }), !needed.isEmpty {
                    outcome = .refused(
                        .publishFailed,
                        "the payload keeps the sender's URL, whose media a phone cannot use as it is (it needed: "
                            + needed.joined(separator: ", ") + "): " + failed.detail)
                    kept.removeAll { $0.code == .publishFailed }
                }
            case (nil, let problem?):
                outcome = .refused(problem.code, problem.detail)
                kept.removeFirst()
            case (nil, nil):
                outcome = .refused(.expired, "the deadline came before it finished")
            }
            return Verdict(
                field: reference.field, source: reference.url, platform: reference.platform,
                convention: reference.convention, outcome: outcome, media: attachment?.media, notes: kept)
        }
        self.problems = problems
    }

    /// For an input that is not a payload (or could not be read): its problem, no verdict.
    public init(invalid error: PayloadError, elapsed: Duration = .zero) {
        format = nil
        verdicts = []
        problems = [EnrichmentProblem(source: "payload", code: error.code, detail: error.detail)]
        content = nil
        self.elapsed = elapsed
        unfetched = 0
    }
}

extension Enricher {
    /// Checks what each phone will show of `payload`'s media: every reference downloaded and transformed as
    /// `enrich` does, under `deadline` (give it room: a campaign's check is not a phone's 30 s; the CLI's default is
    /// 120 s), each verdict per platform. The attachments made to judge are removed before it returns; with a
    /// publisher, the published copies stay and `content` names them.
    public func preflight(_ payload: PushPayload, deadline: ContinuousClock.Instant) async -> Preflight {
        let run = EnrichmentRun(payload: payload, configuration: configuration)
        let result: EnrichmentResult
        if gate.enter() {
            await process(run, deadline: deadline)
            gate.leave()
            result = run.close()
        } else {
            result = run.refused()
        }
        removeAttachments(of: result)
        var preflight = Preflight(references: run.references, unfetched: run.unfetchedCount, result: result)
        if preflight.verdicts.contains(where: { $0.platform == .ios }), let missing = run.missingAlert {
            preflight.problems.append(missing)
        }
        if result.content != nil { preflight.content = run.readyToSend(result.attachments) }
        return preflight
    }

    /// `preflight(_:deadline:)` of an input's bytes, parsed under this enricher's limits; an input that is not a
    /// payload gives a preflight with its problem and no verdict.
    public func preflight(json bytes: some Collection<UInt8>, deadline: ContinuousClock.Instant) async -> Preflight {
        let start = ContinuousClock.now
        do {
            return await preflight(try payload(parsing: bytes), deadline: deadline)
        } catch {
            return Preflight(invalid: error, elapsed: .now - start)
        }
    }
}

extension String {
    /// Without leading and trailing spaces and tabs.
    fileprivate var trimmingSpaces: String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        return String(drop(while: blank).reversed().drop(while: blank).reversed())
    }
}
