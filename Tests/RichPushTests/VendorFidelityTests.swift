import FixtureOrigin
import Foundation
import Testing

@testable import RichPush
@testable import RichPushConventions

/// Issue 12: where RichPush did other than the vendor's own extension, each case with its fixture.
@Suite("Vendor fidelity: conventions as the vendors' SDKs read them")
struct VendorFidelityTests {
    func scan(fixture name: String) throws -> ConventionScan {
        let text = try String(contentsOfFile: FixtureDirectory.payloads + "/" + name, encoding: .utf8)
        return ConventionRegistry.standard.scan(try PushPayload(parsing: Array(text.utf8)))
    }

    func scan(_ text: String) throws -> ConventionScan {
        ConventionRegistry.standard.scan(try PushPayload(parsing: Array(text.utf8)))
    }

    @Test("Airship thumbnail_id: every other attachment, a lone url's too, gets a hidden thumbnail")
    func airshipThumbnailHidden() throws {
        let result = try scan(fixture: "airship-thumbnail.json")
        #expect(result.references.map(\.identifier) == ["hero", "loop", "airship-3"])
        #expect(result.references.map { $0.thumbnail?.primary } == [false, true, false])
        #expect(result.references.map { $0.thumbnail?.hidden } == [true, false, true])
        // An explicit options.hidden wins over the thumbnail_id rule; a lone url's id is "".
        let explicit = try scan(
            #"{"com.urbanairship.media_attachment":{"url":"https://a/1.jpg","thumbnail_id":"x","#
                + #""options":{"hidden":false}}}"#
        )
        #expect(explicit.references.first?.thumbnail == Thumbnail(primary: false, hidden: false))
        let empty = try scan(#"{"com.urbanairship.media_attachment":{"url":"https://a/1.jpg","thumbnail_id":""}}"#)
        #expect(empty.references.first?.thumbnail == Thumbnail(primary: true, hidden: false))
        // Without thumbnail_id, Airship says nothing of the thumbnail.
        #expect(
            try scan(#"{"com.urbanairship.media_attachment":{"url":"https://a/1.jpg"}}"#).references.first?.thumbnail
                == nil)
    }

    @Test("Airship types the SDK rejects are bad-option; a negative time is accepted, as Airship accepts it")
    func airshipTypes() throws {
        let result = try scan(fixture: "airship-bad-types.json")
        let key = AirshipConvention.key
        #expect(result.problems.map(\.code) == [.badOption, .badOption, .badOption])
        #expect(
            Set(result.problems.map(\.source))
                == ["\(key).thumbnail_id", "\(key).options.hidden", "\(key).urls[0].url_id"])
        #expect(result.references.map(\.identifier) == ["airship"])
        #expect(result.references.first?.thumbnail == Thumbnail(time: -2))
    }

    @Test("Airship's Accengage form: a4sid with acc-atts [{att-url, att-id}], thumbnail_id beside it")
    func accengage() throws {
        let result = try scan(fixture: "accengage.json")
        #expect(result.references.map(\.convention) == ["airship", "airship"])
        #expect(result.references.map(\.identifier) == ["main", "sound"])
        #expect(result.references.map(\.field) == ["acc-atts[0].att-url", "acc-atts[1].att-url"])
        #expect(result.references.map { $0.thumbnail?.hidden } == [false, true])
        #expect(result.problems.isEmpty)
        // acc-atts without a4sid is not Accengage's.
        #expect(try scan(#"{"acc-atts":[{"att-url":"https://a/1.jpg"}]}"#).references.isEmpty)
    }

    @Test("Notifee: title, subtitle and body in notifee_options replace the alert text; other types are bad-option")
    func notifeeText() throws {
        let result = try scan(fixture: "notifee-text.json")
        #expect(result.overrides == [AlertOverride(title: "Shared with you", subtitle: "Album", body: "3 new photos")])
        let wrong = try scan(#"{"notifee_options":"{\"title\":5,\"body\":\"b\",\"image\":\"https://n/0.png\"}"}"#)
        #expect(wrong.problems.map(\.code) == [.badOption])
        #expect(wrong.problems.first?.source == "notifee_options.title")
        #expect(wrong.overrides == [AlertOverride(body: "b")])
    }

    @Test(
        "Home Assistant: lazy and camera pushes fetch nothing and say why",
        arguments: [
            ("home-assistant-lazy.json", "attachment.url", "lazy"),
            ("home-assistant-camera.json", "entity_id", "camera.front_door"),
        ])
    func homeAssistantOnDevice(fixture: String, source: String, mention: String) throws {
        let result = try scan(fixture: fixture)
        #expect(result.references.isEmpty)
        #expect(result.problems.map(\.code) == [.onDevice])
        #expect(result.problems.first?.source == source)
        #expect(result.problems.first?.detail.contains(mention) == true)
    }

    @Test("Home Assistant: a camera push with a URL fetches it; lazy: false fetches")
    func homeAssistantFetched() throws {
        #expect(try scan(fixture: "home-assistant.json").references.map(\.url).count == 1)
        let eager = try scan(#"{"attachment":{"url":"https://h/1.jpg","lazy":false}}"#)
        #expect(eager.references.count == 1)
        #expect(eager.problems.isEmpty)
    }

    @Test("OneSignal: URLs are trimmed of spaces and tabs; a name without a scheme is an app-bundle file")
    func oneSignalTrimAndBundle() throws {
        let result = try scan(fixture: "onesignal-bundle.json")
        #expect(result.references.map(\.url) == ["http://media.example.com:8787/media/photo.jpg"])
        #expect(result.references.map(\.identifier) == ["box"])
        #expect(result.problems.map(\.code) == [.onDevice])
        #expect(result.problems.first?.source == "os_data.att.badge")
        #expect(result.problems.first?.detail.contains("sale.png") == true)
        // A line break is not trimmed (OneSignal trims spaces and tabs only); another scheme is left to the URL
        // checks (blocked-scheme), not called a bundle file.
        let other = try scan(#"{"att":{"a":"ftp://o/1.png","b":"https://o/2.png\n"}}"#)
        #expect(other.references.map(\.url) == ["ftp://o/1.png", "https://o/2.png\n"])
        #expect(other.problems.isEmpty)
    }

    @Test(
        "identifiers the vendors' own code looks for",
        arguments: [("batch.json", "batch_rich_attachment"), ("customerio.json", "cio_sdk_image")])
    func identifiers(fixture: String, identifier: String) throws {
        #expect(try scan(fixture: fixture).references.map(\.identifier) == [identifier])
    }

    @Test("one URL in two conventions keeps the thumbnail role the later one gave it")
    func roleSurvivesDeduplication() throws {
        let result = try scan(fixture: "same-url-roles.json")
        #expect(result.references.map(\.convention) == ["adb_media", "airship"])
        #expect(result.references.map(\.url.lastPathComponent) == ["photo.jpg", "anim.gif"])
        #expect(result.references.map { $0.thumbnail?.primary } == [true, false])
        #expect(result.references.map { $0.thumbnail?.hidden } == [false, true])
        // What the first said stays: a later reference only fills what it left unsaid.
        let kept = Thumbnail(primary: false, hidden: nil).filled(from: Thumbnail(primary: true, hidden: true))
        #expect(kept == Thumbnail(primary: false, hidden: true))
    }
}

@Suite("Vendor fidelity: results against the loopback origin")
struct VendorFidelityResultTests {
    func enrich(_ fixture: String, on bed: TestBed) async throws -> EnrichmentResult {
        try await withEnricher(bed.configuration) { enricher in
            // Not what is tested: a deadline that a loaded machine does not reach (a clean-clone run at load 11
            // expired two of these at 10 s).
            await enricher.enrich(try bed.fixturePayload(fixture), timeout: .seconds(30))
        }
    }

    func alert(_ result: EnrichmentResult) -> JSONObject? {
        result.content?.root["aps"]?.objectValue?["alert"]?.objectValue
    }

    @Test("Airship content replaces the text only when every attachment was made")
    func airshipContentOnlyOnSuccess() async throws {
        let bed = try TestBed()
        let failed = try await enrich("airship-failed.json", on: bed)
        #expect(failed.outcome == .partial)
        #expect(failed.problems.map(\.code) == [.httpStatus])
        #expect(alert(failed)?["title"]?.stringValue == "Sale")
        #expect(alert(failed)?["body"]?.stringValue == "Tap")
        let complete = try await enrich("airship.json", on: bed)
        #expect(complete.outcome == .complete)
        #expect(alert(complete)?["title"]?.stringValue == "48 hours only")
    }

    @Test("every problem of a fetched reference carries its attempts, a type mismatch too; a field's has none")
    func attemptsOnProblems() async throws {
        let bed = try TestBed()
        let mismatch = try await enrich("clevertap-mismatch.json", on: bed)
        #expect(mismatch.problems.map(\.code) == [.typeMismatch])
        #expect(mismatch.problems.map(\.attempts) == [1])
        let options = try await enrich("airship-bad-types.json", on: bed)
        #expect(options.problems.allSatisfy { $0.attempts == nil }, "\(options.problems)")
    }

    @Test("Notifee's text replaces the alert in the returned content")
    func notifeeTextApplied() async throws {
        let bed = try TestBed()
        let result = try await enrich("notifee-text.json", on: bed)
        #expect(result.outcome == .complete)
        #expect(alert(result)?["title"]?.stringValue == "Shared with you")
        #expect(alert(result)?["subtitle"]?.stringValue == "Album")
        #expect(alert(result)?["body"]?.stringValue == "3 new photos")
    }

    @Test(
        "Home Assistant lazy and camera, OneSignal bundle files, Kumulos picture paths: a problem, no request",
        arguments: [
            ("home-assistant-lazy.json", EnrichmentResult.Outcome.unchanged, 0),
            ("home-assistant-camera.json", .unchanged, 0),
            ("onesignal-bundle.json", .complete, 1),
            ("kumulos-relative.json", .unchanged, 0),
        ])
    func onDeviceNotFetched(fixture: String, outcome: EnrichmentResult.Outcome, requests: Int) async throws {
        let bed = try TestBed()
        let result = try await enrich(fixture, on: bed)
        #expect(result.outcome == outcome)
        #expect(result.problems.map(\.code) == [.onDevice])
        #expect(result.attachments.count == requests)
        #expect(bed.origin.requestLog.count == requests, "requests: \(bed.origin.requestLog)")
    }

    @Test("the attachment two conventions share is listed first when Airship made it the thumbnail")
    func sharedAttachmentFirst() async throws {
        let bed = try TestBed()
        let result = try await enrich("same-url-roles.json", on: bed)
        #expect(result.outcome == .complete)
        let list = result.content?.root["richpush"]?.objectValue?["attachments"]
        guard case .array(let items)? = list else {
            Issue.record("no richpush.attachments in \(String(describing: result.content))")
            return
        }
        #expect(items.map { $0.objectValue?["identifier"]?.stringValue } == ["adb_media", "loop"])
        #expect(result.attachments.first?.thumbnail == Thumbnail(primary: true, hidden: false))
    }
}

extension String {
    fileprivate var lastPathComponent: String { split(separator: "/").last.map(String.init) ?? self }
}
