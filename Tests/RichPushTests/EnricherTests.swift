import FixtureOrigin
import Foundation
import Testing

@testable import RichPush

extension TestBed {
    /// A fixture payload with its demo origin replaced by this bed's.
    func fixturePayload(_ name: String) throws -> PushPayload {
        let text = try String(contentsOfFile: FixtureDirectory.payloads + "/" + name, encoding: .utf8)
            .replacingOccurrences(of: "http://media.example.com:8787", with: url(""))
        return try PushPayload(parsing: Array(text.utf8))
    }

    func payload(_ text: String) throws -> PushPayload {
        try PushPayload(parsing: Array(text.replacingOccurrences(of: "ORIGIN", with: url("")).utf8))
    }
}

@Suite("Enricher: payload to attachments")
struct EnricherTests {
    @Test(
        "each fixture payload gets its outcome, types and conventions",
        arguments: [
            ("adobe-photo.json", EnrichmentResult.Outcome.complete, ["adb_media:public.jpeg"]),
            ("adobe-video.json", .complete, ["adb_media:public.mpeg-4"]),
            ("zego-string.json", .complete, ["zego:com.compuserve.gif"]),
            ("zego-object.json", .complete, ["zego:public.mpeg-4-audio"]),
            ("two-conventions.json", .complete, ["adb_media:public.png", "zego:public.mp3"]),
            ("same-url-twice.json", .complete, ["adb_media:public.jpeg"]),
            ("html-as-image.json", .failed, []),
            ("no-media.json", .unchanged, []),
            ("not-mutable.json", .complete, ["adb_media:public.png"]),
            ("airship.json", .complete, ["airship:public.jpeg", "airship:com.compuserve.gif"]),
            ("airship-url.json", .complete, ["airship:public.mp3"]),
            ("onesignal.json", .complete, ["onesignal:public.png", "onesignal:public.mpeg-4"]),
            ("onesignal-osdata.json", .complete, ["onesignal:public.jpeg"]),
            ("fcm.json", .complete, ["fcm:public.jpeg"]),
            ("clevertap.json", .complete, ["clevertap:com.compuserve.gif"]),
            ("clevertap-mismatch.json", .complete, ["clevertap:public.jpeg"]),
            ("iterable.json", .complete, ["iterable:public.png"]),
            ("customerio.json", .complete, ["customerio:public.jpeg"]),
            ("pushwoosh.json", .complete, ["pushwoosh:com.microsoft.waveform-audio"]),
            ("batch.json", .complete, ["batch:public.mpeg-2-video"]),
            ("amplify.json", .complete, ["amplify:public.aiff-audio"]),
            ("notifee.json", .complete, ["notifee:public.jpeg", "notifee:public.mpeg-4"]),
            ("home-assistant.json", .complete, ["home_assistant:public.jpeg"]),
            ("braze.json", .complete, ["braze:com.compuserve.gif"]),
            (
                "airship-thumbnail.json", .complete,
                ["airship:public.jpeg", "airship:com.compuserve.gif", "airship:public.png"]
            ),
            ("airship-failed.json", .partial, ["airship:public.jpeg"]),
            ("airship-bad-types.json", .complete, ["airship:public.mpeg-4"]),
            ("accengage.json", .complete, ["airship:public.jpeg", "airship:public.mp3"]),
            ("notifee-text.json", .complete, ["notifee:public.png"]),
            ("home-assistant-lazy.json", .unchanged, []),
            ("home-assistant-camera.json", .unchanged, []),
            ("onesignal-bundle.json", .complete, ["onesignal:public.jpeg"]),
            ("same-url-roles.json", .complete, ["adb_media:public.jpeg", "airship:com.compuserve.gif"]),
            ("route-airship.json", .complete, ["airship:public.jpeg"]),
            ("route-braze.json", .complete, ["braze:com.compuserve.gif"]),
            ("route-adobe.json", .complete, ["adb_media:public.png"]),
            ("route-clevertap.json", .complete, ["clevertap:public.jpeg"]),
            ("route-onesignal.json", .complete, ["onesignal:public.jpeg"]),
            ("route-onesignal-custom.json", .complete, ["onesignal:public.png"]),
            ("route-iterable.json", .complete, ["iterable:public.png"]),
            ("retry-transient.json", .partial, ["adb_media:public.jpeg", "fcm:public.png"]),
            ("moengage.json", .complete, ["moengage:public.mpeg-4"]),
            ("salesforce.json", .complete, ["salesforce:public.jpeg"]),
            ("klaviyo.json", .complete, ["klaviyo:public.png"]),
            ("klaviyo-mismatch.json", .complete, ["klaviyo:public.jpeg"]),
            ("swrve.json", .complete, ["swrve:com.compuserve.gif"]),
            ("adobe-campaign.json", .complete, ["adobe_campaign:public.jpeg"]),
            ("emarsys.json", .complete, ["emarsys:public.png"]),
            ("bloomreach.json", .complete, ["bloomreach:public.jpeg"]),
            ("webengage.json", .complete, ["webengage:public.jpeg"]),
            (
                "webengage-carousel.json", .complete,
                ["webengage:public.jpeg", "webengage:com.compuserve.gif", "webengage:public.png"]
            ),
            ("expo.json", .complete, ["expo:com.compuserve.gif"]),
            ("appcues.json", .complete, ["appcues:public.png"]),
            ("mindbox.json", .complete, ["mindbox:public.jpeg"]),
            ("kumulos.json", .complete, ["kumulos:public.jpeg"]),
            ("kumulos-relative.json", .unchanged, []),
        ])
    func fixtures(name: String, outcome: EnrichmentResult.Outcome, attached: [String]) async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            // 30 s, not what is tested: retry-transient's retries are made only while the deadline leaves room
            // (RetryPolicy), and under a full run's load a 10 s deadline once left none after the first attempts.
            let result = await enricher.enrich(try bed.fixturePayload(name), timeout: .seconds(30))
            #expect(result.outcome == outcome, "\(result.problems)")
            #expect(result.attachments.map { "\($0.convention):\($0.media.type.uti)" } == attached)
            for attachment in result.attachments {
                #expect(FileManager.default.fileExists(atPath: attachment.media.path))
            }
            // One directory per attachment, nothing else on disk.
            #expect(Set(bed.filesOnDisk().map { ($0 as NSString).deletingLastPathComponent }).count == attached.count)
            #expect(bed.filesOnDisk().count == attached.count)
        }
    }

    @Test("the content is the input plus a richpush.attachments list, nothing else changed")
    func mutation() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let payload = try bed.fixturePayload("adobe-photo.json")
            let result = await enricher.enrich(payload, timeout: .seconds(30))
            var content = try #require(result.content)
            let added = try #require(content.root.members.last)
            #expect(added.key.value == "richpush")
            let list = added.value.objectValue?["attachments"]
            guard case .array(let items)? = list, let first = items.first?.objectValue else {
                Issue.record("no attachments list in \(JSONWriter.string(content.json))")
                return
            }
            #expect(first["identifier"]?.stringValue == "adb_media")
            #expect(first["url"]?.stringValue == "file://" + result.attachments[0].media.path)
            #expect(first["type"]?.stringValue == "public.jpeg")
            content.root.members.removeLast()
            #expect(JSONWriter.string(content.json) == JSONWriter.string(payload.json))
        }
    }

    @Test(
        "a sender's own richpush list is removed when nothing attached: it would name local files",
        arguments: ["/missing.jpg", nil])
    func forgedListing(path: String?) async throws {
        let bed = try TestBed()
        let media = path.map { #","adb_media":"\#(bed.url($0))""# } ?? ""
        let text =
            #"{"aps":{"mutable-content":1},"richpush":{"attachments":[{"identifier":"x","url":"file:///etc/shadow"}]}"#
            + media + "}"
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(try PushPayload(parsing: Array(text.utf8)), timeout: .seconds(30))
            #expect(result.outcome == (path == nil ? .unchanged : .failed))
            let content = try #require(result.content)
            #expect(content.root["richpush"] == nil, "\(JSONWriter.string(content.json))")
            #expect(content.root["aps"] != nil)
        }
    }

    @Test(
        "a sender's richpush list in an FCM message's APNs payload is removed, media attached or not",
        arguments: ["/missing.jpg", "/media/photo.jpg"])
    func forgedListingInFCM(path: String) async throws {
        let bed = try TestBed()
        let text =
            #"{"message":{"token":"t","apns":{"payload":{"aps":{"alert":"a","mutable-content":1},"#
            + #""richpush":{"attachments":[{"url":"file:///etc/shadow"}]},"adb_media":"\#(bed.url(path))"}}}}"#
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(try PushPayload(parsing: Array(text.utf8)), timeout: .seconds(30))
            #expect(result.outcome == (path == "/missing.jpg" ? .failed : .complete))
            let apns = result.content?.root["message"]?.objectValue?["apns"]?.objectValue?["payload"]?.objectValue
            #expect(apns?["richpush"] == nil, "\(result.content.map { JSONWriter.string($0.json) } ?? "")")
            #expect(apns?["adb_media"] != nil)
        }
    }

    @Test("Airship: content overrides the alert, the thumbnail's attachment comes first with its options")
    func airshipContent() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(try bed.fixturePayload("airship.json"), timeout: .seconds(30))
            let content = try #require(result.content)
            let alert = content.root["aps"]?.objectValue?["alert"]?.objectValue
            #expect(alert?["title"]?.stringValue == "48 hours only")
            #expect(alert?["subtitle"]?.stringValue == "Everything -30%")
            #expect(alert?["body"]?.stringValue == "Tap to shop")
            guard case .array(let list)? = content.root["richpush"]?.objectValue?["attachments"] else {
                Issue.record("no attachments list")
                return
            }
            #expect(list.compactMap { $0.objectValue?["identifier"]?.stringValue } == ["loop", "hero"])
            let thumbnail = list.first?.objectValue?["thumbnail"]
            #expect(
                thumbnail.map { JSONWriter.string($0) }
                    == #"{"primary":true,"hidden":false,"clip":{"x":0.1,"y":0.2,"width":0.5,"height":0.5},"time":0}"#)
            #expect(JSONWriter.string(result.json(input: "x")).contains(#""thumbnail":{"primary":false"#))
        }
    }

    @Test("a declared type is kept as type_hint; when the bytes disagree, type-mismatch and the bytes win")
    func typeHints() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let agreeing = await enricher.enrich(try bed.fixturePayload("clevertap.json"), timeout: .seconds(30))
            #expect(agreeing.problems.isEmpty)
            #expect(agreeing.attachments.first?.typeHint == "gif")
            let mismatch = await enricher.enrich(
                try bed.fixturePayload("clevertap-mismatch.json"), timeout: .seconds(30))
            #expect(mismatch.outcome == .complete)
            #expect(mismatch.problems.map(\.code) == [.typeMismatch])
            #expect(mismatch.problems.first?.detail.contains("'video'") == true)
            #expect(mismatch.attachments.first?.media.path.hasSuffix(".jpg") == true)
            #expect(JSONWriter.string(mismatch.json(input: "x")).contains(#""type_hint":"video""#))
        }
    }

    @Test("not-mutable is reported and the media still processed")
    func notMutable() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(try bed.fixturePayload("not-mutable.json"), timeout: .seconds(30))
            #expect(result.problems.map(\.code) == [.notMutable])
            #expect(result.attachments.count == 1)
        }
    }

    @Test("a partial result when one of two references fails")
    func partial() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let payload = try bed.payload(
                #"{"aps":{"mutable-content":1},"adb_media":"ORIGIN/media/logo.png","#
                    + #""payload":{"image_attachment":"ORIGIN/media/icon.svg"}}"#
            )
            let result = await enricher.enrich(payload, timeout: .seconds(30))
            #expect(result.outcome == .partial)
            #expect(result.problems.map(\.code) == [.unsupportedType])
            #expect(result.problems.first?.source.hasSuffix("/media/icon.svg") == true)
        }
    }

    @Test("a wrong-typed reference counts as not attached")
    func badReference() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(
                try bed.payload(#"{"aps":{"mutable-content":1},"adb_media":7}"#), timeout: .seconds(5))
            #expect(result.outcome == .failed)
            #expect(result.problems.map(\.code) == [.badReference])
        }
    }

    @Test("references beyond the limit are reported, not fetched")
    func tooManyReferences() async throws {
        let bed = try TestBed { $0.limits.maximumReferences = 1 }
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(try bed.fixturePayload("two-conventions.json"), timeout: .seconds(30))
            #expect(result.outcome == .partial)
            #expect(result.attachments.count == 1)
            #expect(result.problems.map(\.code) == [.tooManyReferences])
            #expect(!bed.origin.requestLog.contains { $0.contains("chime.mp3") })
        }
    }

    @Test("invalid input gives an invalid result with its code")
    func invalid() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(json: Array("[1]".utf8), source: "x.json", deadline: .now + .seconds(1))
            #expect(result.outcome == .invalid)
            #expect(result.content == nil)
            #expect(result.problems.map(\.code.rawValue) == ["not-object"])
            #expect(result.problems.first?.source == "x.json")
        }
    }
}

@Suite("The deadline and the best attempt")
struct DeadlineTests {
    @Test("a slow server hits the deadline: returned in time, no partial file, outcome expired")
    func slowServer() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            // 5,905 bytes at 100 bytes per 100 ms would take 6 s.
            let payload = try bed.payload(
                #"{"aps":{"mutable-content":1},"adb_media":"ORIGIN/drip/photo.jpg?bytes=100&ms=100"}"#)
            let deadline = ContinuousClock.now + .milliseconds(800)
            let control = DeadlineControl(at: deadline)
            let result = await enricher.enrich(payload, deadline: deadline)
            let returned = ContinuousClock.now
            await control.expectOnTime(returned)
            #expect(returned >= deadline - .milliseconds(50), "returned \(deadline - returned) before the deadline")
            #expect(result.outcome == .expired)
            #expect(result.problems.map(\.code) == [.expired])
            #expect(bed.entriesOnDisk().isEmpty, "left behind: \(bed.entriesOnDisk())")
        }
    }

    @Test("what finished before the deadline is kept: the best attempt")
    func bestAttempt() async throws {
        // No low-speed rule ends the stall: only the deadline does.
        let bed = try TestBed { $0.network.lowSpeedWindow = .seconds(600) }
        try await withEnricher(bed.configuration) { enricher in
            // The photo is in the cache: it finishes however loaded the machine is, and the deadline can be short.
            try await fetchOnce("/media/photo.jpg", through: enricher, on: bed)
            let payload = try bed.payload(
                #"{"aps":{"mutable-content":1},"adb_media":"ORIGIN/media/photo.jpg","#
                    + #""payload":{"image_attachment":"ORIGIN/stall"}}"#
            )
            let result = await enricher.enrich(payload, timeout: .milliseconds(500))
            #expect(result.outcome == .expired)
            #expect(result.attachments.map(\.media.type) == [.jpeg])
            #expect(result.problems.map(\.code) == [.expired])
            #expect(result.problems.first?.source.hasSuffix("/stall") == true)
            let kept = result.attachments.map { String($0.media.path.dropFirst(bed.attachments.count + 1)) }
            #expect(bed.filesOnDisk() == kept)
            #expect(result.content?.root["richpush"] != nil)
        }
    }

    @Test("a server that never answers expires too")
    func silence() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let deadline = ContinuousClock.now + .milliseconds(500)
            let control = DeadlineControl(at: deadline)
            let result = await enricher.enrich(try bed.payload(#"{"adb_media":"ORIGIN/silence"}"#), deadline: deadline)
            await control.expectOnTime(.now)
            #expect(result.outcome == .expired)
        }
    }

    @Test("cancelling the calling task removes the partial file and returns at once")
    func cancellation() async throws {
        // Every body written as it arrives: the partial file is there to see.
        let bed = try TestBed { $0.limits.heldBodyBytes = 0 }
        try await withEnricher(bed.configuration) { enricher in
            let payload = try bed.payload(
                #"{"aps":{"mutable-content":1},"adb_media":"ORIGIN/drip/photo.jpg?bytes=200&ms=100"}"#)
            let task = Task { await enricher.enrich(payload, timeout: .seconds(20)) }
            try await waitUntil("the transfer to write its partial file") {
                bed.filesOnDisk().contains { $0.hasSuffix(".partial") }
            }
            // "At once": no later than a task of this process woken at the same moment, plus the slack.
            let control = DeadlineControl(at: .now)
            task.cancel()
            let result = await task.value
            await control.expectOnTime(.now)
            #expect(result.problems.map(\.code) == [.cancelled])
            #expect(result.outcome == .cancelled)
            #expect(bed.entriesOnDisk().isEmpty)
        }
    }

    @Test("cancelling the calling task while its body is held in memory lets go of it and leaves no file")
    func cancellationHeld() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let payload = try bed.payload(
                #"{"aps":{"mutable-content":1},"adb_media":"ORIGIN/drip/photo.jpg?bytes=200&ms=100"}"#)
            let task = Task { await enricher.enrich(payload, timeout: .seconds(20)) }
            try await waitUntil("the body to be held in memory") { enricher.fetcher.heldBodyBytes > 0 }
            task.cancel()
            let result = await task.value
            #expect(result.outcome == .cancelled)
            #expect(enricher.fetcher.heldBodyBytes == 0)
            #expect(bed.entriesOnDisk().isEmpty)
        }
    }

    @Test("under load, each of 200 payloads gets exactly one delivery, completion racing expiry")
    func exactlyOnceUnderLoad() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let count = 200
            let deliveries = LockedValue([Int](repeating: 0, count: count))
            let outcomes = LockedValue([EnrichmentResult.Outcome?](repeating: nil, count: count))
            let extensions = (0..<count).map { _ in MediaServiceExtension(enricher: enricher) }
            for index in 0..<count {
                // Half finish quickly, half drip; expiry is called at spread-out times so both orders happen. The
                // drips take from ~150 ms to ~1 s (1,046 bytes, 200 every 30 to 210 ms): at 30 ms a step alone, under
                // a loaded full run every one had finished before the expiry loop reached it, and none expired.
                let step = 30 + index % 7 * 30
                let path = index % 2 == 0 ? "/media/photo.jpg" : "/drip/logo.png?bytes=200&ms=\(step)"
                let payload = try bed.payload(#"{"aps":{"mutable-content":1},"adb_media":"ORIGIN\#(path)"}"#)
                extensions[index].didReceive(payload, deadline: .now + .seconds(10)) { result in
                    deliveries.withLock { $0[index] += 1 }
                    outcomes.withLock { $0[index] = result.outcome }
                }
            }
            // Both orders must happen: expiry starts once a first payload has completed (and is then expired again,
            // which must not deliver twice), while the dripping ones are still running or queued for a connection.
            try await waitUntil("a first payload to complete") { outcomes.withLock { $0.contains(.complete) } }
            for index in 0..<count {
                if index % 10 == 0 { try await Task.sleep(for: .milliseconds(5)) }
                extensions[index].serviceExtensionTimeWillExpire()
                extensions[index].serviceExtensionTimeWillExpire()
            }
            // Everything has been delivered by expiry; each run's own completion, racing it, has tried to deliver
            // once its work has ended (bounded by its 10 s deadline). A second delivery would be counted by now.
            for service in extensions { await service.settle() }
            #expect(deliveries.withLock { $0 } == [Int](repeating: 1, count: count))
            #expect(Set(outcomes.withLock { $0 }.compactMap { $0 }) == [.complete, .expired])
        }
    }

    @Test("the extension delivers once on completion when nobody expires it")
    func extensionCompletes() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let service = MediaServiceExtension(enricher: enricher)
            let delivered = LockedValue<[EnrichmentResult.Outcome]>([])
            let payload = try bed.fixturePayload("adobe-photo.json")
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                service.didReceive(payload) { result in
                    delivered.withLock { $0.append(result.outcome) }
                    continuation.resume()
                }
            }
            service.serviceExtensionTimeWillExpire()
            #expect(delivered.withLock { $0 } == [.complete])
        }
    }
}
