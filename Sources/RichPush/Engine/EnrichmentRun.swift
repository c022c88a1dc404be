#if canImport(Glibc)
    import Glibc
#endif

/// One payload being processed: its references, and what has been settled so far. Shared by the fetches that
/// record into it and whoever asks for the best attempt (the deadline, `serviceExtensionTimeWillExpire`).
final class EnrichmentRun: Sendable {
    let payload: PushPayload
    let references: [MediaReference]
    private let start: ContinuousClock.Instant
    private let initialProblems: [EnrichmentProblem]
    /// References found and not fetched, counted as not attached: fields holding no URL (those past the problems'
    /// cap included), and references beyond the limit.
    let unfetchedCount: Int
    /// Text changes the payload's conventions ask for, applied to the returned content.
    private let overrides: [AlertOverride]
    private let route: DeepLinkRoute?
    /// What the input was read as, and, for an FCM message, the message.
    let format: PayloadFormat
    private let message: FCMMessage?
    /// What has been settled, the attempts, and whether a result has closed the run: one lock per run. There were
    /// two (`LockedValue`s, each a mutex and a condition of its own) and three dictionaries by index, made for every
    /// payload though most have one reference.
    private let state = LockedValue(State())

    /// What is known of each reference, and whether a result has closed the run.
    ///
    /// The first reference's slot is held inline and the others' in an array grown as they are first written: a
    /// payload with one reference (most of them) makes no collection at all.
    private struct State {
        var first = Slot()
        /// The slots of references 1, 2, ... (index - 1).
        var rest: [Slot] = []
        /// Set by `close`: a result was handed over, and nothing recorded later can be part of it.
        var closed = false

        /// The slot of reference `index`, moved out (an empty one is left, or given when nothing was written).
        mutating func take(_ index: Int) -> Slot {
            var slot = Slot()
            if index == 0 {
                swap(&slot, &first)
            } else if index <= rest.count {
                swap(&slot, &rest[index - 1])
            }
            return slot
        }

        /// Changes the slot of reference `index`.
        mutating func update<Result>(_ index: Int, _ body: (inout Slot) -> Result) -> Result {
            if index == 0 { return body(&first) }
            if rest.count < index { rest.append(contentsOf: repeatElement(Slot(), count: index - rest.count)) }
            return body(&rest[index - 1])
        }
    }

    /// What is known of one reference.
    private struct Slot {
        /// How it ended, once it has settled.
        var outcome: Result<FetchedMedia, FetchFailure>?
        /// How the first URL failed, when `outcome` is its fallback's.
        var primaryFailure: FetchFailure?
        /// The number of the attempt it is on, or ended with (see `RetryPolicy`); nil before the first.
        var attempt: Int?
    }

    /// The problem of a payload that iOS would deliver to no service extension because it shows no alert (Apple:
    /// the extension runs only for a remote notification configured to display an alert): `no-alert`, for
    /// `preflight`; nil when it shows one, or is not mutable (`not-mutable` says so already). An FCM message shows one
    /// when its `notification` has a title or a body (FCM writes them into `aps.alert`) or its APNs payload has one.
    var missingAlert: EnrichmentProblem? {
        guard !Self.showsAlert(payload, message: message) else { return nil }
        if let message {
            guard message.apnsPayload?.isMutable == true else { return nil }
            let field = message.prefix + "apns.payload.aps.alert"
            return EnrichmentProblem(
                source: field, code: .noAlert,
                detail: "neither message.notification's title or body nor \(field) is given: iOS shows no alert, and "
                    + "runs no service extension for a notification without one",
                platform: .ios)
        }
        guard payload.isMutable else { return nil }
        return EnrichmentProblem(
            source: "aps.alert", code: .noAlert,
            detail: "aps.alert is missing or empty: iOS runs the service extension only for a notification that shows "
                + "an alert (a silent, sound-only or badge-only push shows no media)")
    }

    /// Whether iOS shows `payload` (read as `message` when it is an FCM message) with an alert: its `aps.alert`, or
    /// an FCM message's `notification` title or body (FCM writes them into `aps.alert`) or its APNs payload's.
    static func showsAlert(_ payload: PushPayload, message: FCMMessage?) -> Bool {
        guard let message else { return shows(payload.root["aps"]?.objectValue?["alert"]) }
        let notification = message.message["notification"]?.objectValue
        let aps = message.apnsPayload?.root["aps"]?.objectValue
        return [notification?["title"], notification?["body"], aps?["alert"]].contains(where: shows)
    }

    /// Whether an alert field shows something: a string that is not empty, or an object with a member.
    private static func shows(_ value: PushPayload.JSON?) -> Bool {
        switch value {
        case .string(let text)?: !text.value.isEmpty
        case .object(let object)?: !object.members.isEmpty
        default: false
        }
    }

    init(payload: PushPayload, configuration: Enricher.Configuration, start: ContinuousClock.Instant = .now) {
        self.payload = payload
        self.start = start
        let format = PayloadFormat.detect(payload)
        let message = FCMMessage(payload, format: format)
        self.format = format
        self.message = message
        var scan = message?.scan(with: configuration.conventions) ?? configuration.conventions.scan(payload)
        var problems: [EnrichmentProblem] = []
        if let message {
            // FCM's iOS SDK shows an image only through a service extension: said when there is one for iOS.
            let aps = message.apnsPayload?.root["aps"]?.objectValue
            if scan.references.contains(where: { $0.platform == .ios }), message.apnsPayload?.isMutable != true {
                let field = message.prefix + "apns.payload.aps.mutable-content"
                let value = aps?["mutable-content"].map { JSONWriter.string($0) }
                problems.append(
                    EnrichmentProblem(
                        source: field, code: .notMutable,
                        detail:
                            "\(field) is \(value ?? "missing"), not 1: on iOS the service extension that shows "
                            + "FCM's image would not run",
                        platform: .ios))
            }
        } else if !payload.isMutable {
            let value = (payload.root["aps"]?.objectValue?["mutable-content"]).map { JSONWriter.string($0) }
            problems.append(
                EnrichmentProblem(
                    source: "aps.mutable-content", code: .notMutable,
                    detail:
                        "aps.mutable-content is \(value ?? "missing"), not 1: on iOS the service extension would not "
                        + "run"
                ))
        }
        problems += scan.listedProblems
        let limit = configuration.limits.maximumReferences
        var unfetched = scan.problems.filter { $0.code == .badReference }.count + scan.omittedBadReferences
        if scan.references.count > limit {
            let dropped = scan.references[limit...]
            unfetched += dropped.count
            // An FCM message's problem names its platform when every reference dropped is for one.
            let platform = dropped.first!.platform
            let one = message != nil && dropped.allSatisfy { $0.platform == platform }
            problems.append(
                EnrichmentProblem(
                    source: dropped.first!.field, code: .tooManyReferences,
                    detail: "\(scan.references.count) references; only the first \(limit) are fetched",
                    platform: one ? platform : nil))
            scan.references.removeSubrange(limit...)
        }
        self.references = scan.references
        self.overrides = scan.overrides
        let matched = configuration.conventions.conventions(foundIn: scan.references)
        // An FCM message's route is its APNs payload's (where the vendors' keys are).
        self.route = DeepLinkRoute.find(
            in: message.map { $0.apnsPayload ?? PushPayload(JSONObject()) } ?? payload, conventions: matched,
            keys: configuration.routeKeys)
        self.initialProblems = problems
        self.unfetchedCount = unfetched
    }

    /// Records how reference `index` ended; `primaryFailure` when `outcome` is its fallback's, how the first URL
    /// failed. The first record for an index wins. Returns the outcome back when it was not recorded (the index had
    /// settled, or the run was closed): the caller then owns a fetched file no result names, and removes it; nil
    /// when it was recorded. The outcome is moved into the run, not copied (a retain of each of the media's strings).
    @discardableResult
    func record(
        _ index: Int, _ outcome: consuming Result<FetchedMedia, FetchFailure>, primaryFailure: FetchFailure? = nil
    ) -> Result<FetchedMedia, FetchFailure>? {
        var pending = Optional(outcome)
        state.withLock { state in
            guard !state.closed else { return }
            state.update(index) { slot in
                guard slot.outcome == nil else { return }
                slot.outcome = pending.take()
                slot.primaryFailure = primaryFailure
            }
        }
        return pending
    }

    /// Notes that reference `index` starts its attempt number `attempt`.
    func attempting(_ index: Int, _ attempt: Int) {
        state.withLock { $0.update(index) { $0.attempt = attempt } }
    }

    /// The result as it stands, and the run closed: whatever is recorded later is refused (`record` hands it back),
    /// so that every stored file is either in this result or removed by whoever fetched it. With `expired`,
    /// references not yet settled count as expired.
    func close(expired: Bool = false) -> EnrichmentResult {
        result(closing(), expired: expired)
    }

    /// Closes the run and moves out what it holds (nothing read from it later needs it: `record` is refused from
    /// now on).
    private func closing() -> State {
        state.withLock { state in
            var taken = State()
            swap(&taken, &state)
            state.closed = true
            return taken
        }
    }

    /// The result for a payload refused because the engine is shutting down: nothing fetched, outcome `cancelled`.
    func refused() -> EnrichmentResult {
        var state = closing()
        let notFetched = FetchFailure(.cancelled, "not fetched: the engine is shutting down")
        for index in references.indices {
            state.update(index) { slot in
                slot.outcome = .failure(notFetched)
                slot.primaryFailure = nil
            }
        }
        var result = result(state)
        result.outcome = .cancelled
        if references.isEmpty {
            result.problems.append(
                EnrichmentProblem(
                    source: "payload", code: .cancelled, detail: "not processed: the engine is shutting down"))
        }
        return result
    }

    /// The result for what `state` holds: each reference's outcome (references not settled count as expired) and,
    /// for those whose outcome is their fallback's, how the first URL failed. Each slot is moved out of `state`,
    /// not copied.
    private func result(_ state: consuming State, expired: Bool = false) -> EnrichmentResult {
        var attachments: [EnrichmentResult.Attachment] = []
        var problems = initialProblems
        var sawExpiry = false
        var sawCancel = false
        var route = self.route
        for (index, reference) in references.enumerated() {
            var slot = state.take(index)
            // A fallback's outcome names the fallback's URL; the first URL's failure is said first.
            let fallback = slot.primaryFailure == nil ? nil : reference.fallback
            if let fallback, let failure = slot.primaryFailure {
                // "Fetched instead" only when it was: a fallback that failed too says so in its own problem.
                let attached = if case .success? = slot.outcome { true } else { false }
                problems.append(
                    EnrichmentProblem(
                        source: reference.url, code: failure.code,
                        detail: failure.detail + "; its fallback \(fallback.field) was "
                            + (attached ? "fetched instead" : "tried and failed too"),
                        platform: platform(reference)))
            }
            switch slot.outcome.take() {
            case .success(let media)?:
                if let fallback, let link = fallback.route, let field = fallback.routeField {
                    // Swrve's fallback_sd: the deep link that goes with the media shown.
                    var changed = route ?? .empty
                    changed.url = link
                    changed.urlSource = DeepLinkRoute.Source(convention: reference.convention, key: field)
                    route = changed
                }
                if case .failed(let detail)? = media.publication {
                    problems.append(
                        EnrichmentProblem(
                            source: reference.url, code: .publishFailed, detail: detail, platform: platform(reference)))
                }
                // Android shows an animation's first frame whatever is sent: its variant's is no loss.
                if let transformation = media.transformation, transformation.steps.contains(.firstFrame),
                    reference.platform == .ios
                {
                    problems.append(
                        EnrichmentProblem(
                            source: reference.url, code: .animationDropped,
                            detail: transformation.original.type == .png
                                ? "the APNG had to be re-encoded, and libvips reads its first frame alone; that "
                                    + "frame is attached"
                                : "the animation could not be written as a GIF; its first frame is attached",
                            platform: platform(reference)))
                }
                if let damage = media.damage {
                    let part = media.type.kind == .image ? "shows the part that decodes" : "plays what is there"
                    problems.append(
                        EnrichmentProblem(
                            source: reference.url, code: .damaged(media.type),
                            detail: "\(damage); attached: a phone \(part)",
                            platform: platform(reference)))
                }
                if let hint = reference.typeHint, media.type.matches(hint: hint) == false {
                    problems.append(
                        EnrichmentProblem(
                            source: reference.url, code: .typeMismatch,
                            detail:
                                "the payload declares '\(hint)'; the bytes are \(media.type.uti) "
                                + "(\(media.type.mime)), attached as such",
                            attempts: slot.attempt ?? 1, platform: platform(reference)))
                }
                // Last, so that the media moves into its attachment rather than being copied.
                attachments.append(
                    EnrichmentResult.Attachment(
                        identifier: reference.identifier, source: fallback?.url ?? reference.url,
                        field: fallback?.field ?? reference.field, convention: reference.convention,
                        platform: reference.platform, media: media, thumbnail: reference.thumbnail,
                        typeHint: reference.typeHint, attempts: slot.attempt ?? 1,
                        fallbackFor: fallback == nil ? nil : reference.url))
            case .failure(let failure)?:
                if failure.code == .expired { sawExpiry = true }
                if failure.code == .cancelled { sawCancel = true }
                problems.append(
                    EnrichmentProblem(
                        source: fallback?.url ?? reference.url, code: failure.code, detail: failure.detail,
                        attempts: slot.attempt ?? 1, platform: platform(reference)))
            case nil:
                sawExpiry = true
                problems.append(
                    EnrichmentProblem(
                        source: reference.url, code: .expired, detail: "the deadline came before it finished",
                        attempts: slot.attempt, platform: platform(reference)))
            }
        }
        let total = references.count + unfetchedCount
        let outcome: EnrichmentResult.Outcome
        if total == 0 {
            outcome = .unchanged
        } else if sawCancel {
            // The caller's cancellation or a shutdown cut the work short: neither the deadline nor the media.
            outcome = .cancelled
        } else if sawExpiry || (expired && attachments.count < references.count) {
            outcome = .expired
        } else if attachments.count == total {
            outcome = .complete
        } else {
            outcome = attachments.isEmpty ? .failed : .partial
        }
        return EnrichmentResult(
            outcome: outcome, content: Self.mutate(payload, message: message, with: attachments, overrides: overrides),
            attachments: attachments, route: route,
            problems: problems, elapsed: .now - start, format: format)
    }

    /// The platform a reference's problem names: only an FCM message's problems do (an APNs payload is iOS alone).
    private func platform(_ reference: MediaReference) -> DevicePlatform? {
        message == nil ? nil : reference.platform
    }

    /// The content handed back: the payload with the conventions' text overrides applied to `aps.alert`
    /// (Airship's `content`), plus, when anything attached, a top-level `richpush` object listing the
    /// attachments as UNNotificationContent would hold them (identifier, file URL, type, thumbnail options),
    /// the thumbnail's attachment first, since iOS shows the first one; when nothing attached, without the
    /// input's own `richpush` key.
    static func mutate(
        _ payload: PushPayload, message: FCMMessage? = nil, with attachments: [EnrichmentResult.Attachment],
        overrides: [AlertOverride] = []
    ) -> PushPayload {
        if var message {
            return mutate(payload, message: &message, with: attachments, overrides: overrides)
        }
        let content = published(payload, with: attachments, overrides: overrides)
        return listing(attachments, in: content)
    }

    /// The payload as it would be sent: the input with its media URLs replaced by their published copies, nothing
    /// else (no override applied: the phone's SDK applies the vendor's own; no list of local files). What
    /// `preflight` prints.
    func readyToSend(_ attachments: [EnrichmentResult.Attachment]) -> PushPayload {
        if var message {
            return Self.mutate(payload, message: &message, with: attachments, overrides: [])
        }
        return Self.published(payload, with: attachments, overrides: [])
    }

    /// `payload` with `overrides` applied and the published URLs in place of the sender's.
    private static func published(
        _ payload: PushPayload, with attachments: [EnrichmentResult.Attachment], overrides: [AlertOverride]
    ) -> PushPayload {
        var content = payload
        if !overrides.isEmpty {
            let attached = attachedURLs(attachments)
            for override in overrides where override.applies(attached: attached) { override.apply(to: &content) }
        }
        let published = PublishedRewrite.urls(of: attachments)
        PublishedRewrite.apply(published.exact, trimmed: published.trimmed, to: &content)
        return content
    }

    /// `content` with the `richpush` list of `attachments`, when there is any; without any `richpush` key the
    /// input had when there is none (the list names local files: only RichPush writes it, never a sender).
    private static func listing(_ attachments: [EnrichmentResult.Attachment], in content: PushPayload) -> PushPayload {
        guard !attachments.isEmpty else {
            guard content.root["richpush"] != nil else { return content }
            var content = content
            content.root.remove("richpush")
            return content
        }
        // The thumbnail's attachment first, then the others in order; by index, without copying the attachments
        // into two filtered arrays, and each entry made with its keys (`JSONObject(members:)`: no mapped copy).
        // With `set`'s room to add and `fileURL`'s fast path, the campaign profile's `listing` went from 3.1% of
        // the samples to 1.7%.
        var list: [PushPayload.JSON] = []
        list.reserveCapacity(attachments.count)
        for thumbnails in [true, false] {
            for index in attachments.indices where (attachments[index].thumbnail?.primary == true) == thumbnails {
                // Each field read in place: a copy of the attachment was a retain and a release of its strings.
                var members: [JSONObject.Member] = []
                members.reserveCapacity(5)
                members.append((JSONString("identifier"), .text(attachments[index].identifier)))
                members.append((JSONString("url"), .text(fileURL(attachments[index].media.path))))
                members.append((JSONString("type"), .text(attachments[index].media.type.uti)))
                if let hint = attachments[index].typeHint { members.append((JSONString("type_hint"), .text(hint))) }
                if let thumbnail = attachments[index].thumbnail {
                    members.append((JSONString("thumbnail"), thumbnail.json))
                }
                list.append(.object(JSONObject(members: members)))
            }
        }
        var content = content
        content.root.set("richpush", .object(JSONObject(members: [(JSONString("attachments"), .array(list))])))
        return content
    }
}

extension EnrichmentRun {
    /// The content handed back for an FCM message: the same message, sendable as it is (FCM refuses members it does
    /// not know, so no `richpush` list is added: the attachments are in the result). The conventions' text
    /// overrides apply to `apns.payload.aps.alert`; with publishing, the published URLs replace the sender's inside
    /// `apns.payload`, and each platform's own field is set to its own published file (`apns.fcm_options.image` to
    /// the iOS one, `android.notification.image` to the Android variant, made when the message had only
    /// `notification.image`, so that the platforms part ways); `notification.image` stays as sent.
    static func mutate(
        _ payload: PushPayload, message: inout FCMMessage, with attachments: [EnrichmentResult.Attachment],
        overrides: [AlertOverride]
    ) -> PushPayload {
        let attached = attachedURLs(attachments)
        let published = PublishedRewrite.urls(of: attachments, for: .ios)
        let publishedAny = attachments.contains { if case .published = $0.media.publication { true } else { false } }
        // Nothing to change: the message as it came, byte for byte (rewriting it set every member of a key given
        // twice, `message` or `apns`, to the last one's value, in a result that said `unchanged`).
        // A `richpush` list in the APNs payload is a sender's (none is added to an FCM message): it names local files.
        let forged = message.apnsPayload?.root["richpush"] != nil
        guard publishedAny || forged || overrides.contains(where: { $0.applies(attached: attached) }) else {
            return payload
        }
        message.updateAPNSPayload { apns in
            if forged { apns.root.remove("richpush") }
            for override in overrides where override.applies(attached: attached) { override.apply(to: &apns) }
            PublishedRewrite.apply(published.exact, trimmed: published.trimmed, to: &apns)
        }
        for attachment in attachments where attachment.convention == FCMMessage.convention {
            guard case .published(let url)? = attachment.media.publication else { continue }
            switch attachment.platform {
            case .ios: message.set(url, at: ["apns", "fcm_options", "image"])
            case .android: message.set(url, at: ["android", "notification", "image"])
            }
        }
        return message.written(into: payload)
    }
}

/// The URLs `attachments` count as attached, for the text overrides: each one's source, and the URL a fallback
/// stands in for (Swrve's text goes with its media, primary or fallback).
func attachedURLs(_ attachments: [EnrichmentResult.Attachment]) -> [String] {
    attachments.flatMap { [$0.source] + ($0.fallbackFor.map { [$0] } ?? []) }
}

/// `file://` and the absolute path, percent-encoded where a URL path needs it. Written out rather than through
/// `URL(fileURLWithPath:)`, which stats the path (to tell a directory) and showed in the campaign profile.
func fileURL(_ path: String) -> String {
    // A stored file's path (`<root>/<uuid>/<uuid>.<ext>`) most often needs no escape: one concatenation.
    var path = path
    if path.withUTF8({ $0.allSatisfy(isURLPathByte) }) { return "file://" + path }
    let hex = Array("0123456789ABCDEF".utf8)
    var text = Array("file://".utf8)
    text.reserveCapacity(path.utf8.count + 16)
    for byte in path.utf8 {
        if isURLPathByte(byte) {
            text.append(byte)
        } else {
            text += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
        }
    }
    return String(decoding: text, as: UTF8.self)
}

/// Whether a file URL's path holds `byte` as it is: unreserved characters (`A-Z a-z 0-9 - . _ ~`) and the slash.
/// A bit per ASCII byte, set for those: a shift and a test per byte, where the ranges of a `switch` showed in the
/// campaign profile (`fileURL` took 1.1% of the samples, 0.4% with this test and the one concatenation).
private func isURLPathByte(_ byte: UInt8) -> Bool {
    // Bytes 0-63: `-`, `.`, `/`, `0-9` (45 to 57). Bytes 64-127: `A-Z`, `_`, `a-z`, `~`.
    let low: UInt64 = 0x03FF_E000_0000_0000
    let high: UInt64 = 0x47FF_FFFE_87FF_FFFE
    guard byte < 128 else { return false }
    return (byte < 64 ? low : high) >> (byte & 63) & 1 == 1
}
