import FixtureOrigin
import Foundation
import Testing

@testable import RichPush
@testable import RichPushConventions

/// Issue 24, part B: the text a vendor ties to its media, decided on the server from whether the media attached.
@Suite("Fallbacks decided before the phone sees them: Salesforce's _mediaAlt, Swrve's media text")
struct MediaFallbackTests {
    /// A fixture's text with its media URLs on the loopback origin, and each `/media/NAME` of `replacing` in place
    /// by its path on the origin.
    func enrich(_ fixture: String, replacing routes: [String: String] = [:]) async throws -> EnrichmentResult {
        let bed = try TestBed()
        var text = try String(contentsOfFile: FixtureDirectory.payloads + "/" + fixture, encoding: .utf8)
        for (file, route) in routes { text = text.replacingOccurrences(of: "/media/" + file, with: route) }
        let payload = try bed.payload(text.replacingOccurrences(of: "http://media.example.com:8787", with: "ORIGIN"))
        return try await withEnricher(bed.configuration) { enricher in
            // Not what is tested: a deadline a loaded machine does not reach.
            await enricher.enrich(payload, timeout: .seconds(30))
        }
    }

    func alert(_ result: EnrichmentResult) -> JSONObject? {
        result.content?.root["aps"]?.objectValue?["alert"]?.objectValue
    }

    @Test("Salesforce: the alert body is left alone when the media attaches")
    func salesforceAttached() async throws {
        let result = try await enrich("salesforce.json")
        #expect(result.outcome == .complete)
        #expect(alert(result)?["title"]?.stringValue == "Our new collection")
        #expect(alert(result)?["body"]?.stringValue == "Open to see it")
    }

    @Test(
        "Salesforce: _mediaAlt becomes the alert body when the media fails, whatever the failure",
        arguments: ["/status/404", "/empty", "/redirect-loop"])
    func salesforceFailed(route: String) async throws {
        let result = try await enrich("salesforce.json", replacing: ["photo.jpg": route])
        #expect(result.outcome == .failed)
        #expect(result.attachments.isEmpty)
        #expect(alert(result)?["title"]?.stringValue == "Our new collection")
        #expect(alert(result)?["body"]?.stringValue == "The new collection is in store")
    }

    @Test("Salesforce: an alert that is a string is the body _mediaAlt replaces")
    func salesforceStringAlert() async throws {
        let bed = try TestBed()
        let payload = try bed.payload(
            #"{"aps":{"alert":"Open to see it","mutable-content":1},"_mediaUrl":"ORIGIN/status/404","#
                + #""_mediaAlt":"In store now"}"#)
        let result = try await withEnricher(bed.configuration) { await $0.enrich(payload, timeout: .seconds(30)) }
        #expect(result.outcome == .failed)
        #expect(alert(result)?["body"]?.stringValue == "In store now")
    }

    @Test("Swrve: _sw.media's title, subtitle and body replace the alert text when the media attaches")
    func swrveAttached() async throws {
        let result = try await enrich("swrve.json")
        #expect(result.outcome == .complete)
        #expect(alert(result)?["title"]?.stringValue == "World 2 is open")
        #expect(alert(result)?["subtitle"]?.stringValue == "Play now")
        #expect(alert(result)?["body"]?.stringValue == "Bring a friend")
        #expect(result.attachments.map(\.field) == ["_sw.media.url"])
        #expect(result.attachments.first?.fallbackFor == nil)
        #expect(result.route?.url == "app://swrve/world/2")
    }

    @Test(
        """
        Swrve: when the primary fails its fallback_url is fetched and attached, fallback_sd becomes the route, the \
        attachment says what it stands for, and the media text applies
        """)
    func swrveFallback() async throws {
        let result = try await enrich("swrve.json", replacing: ["anim.gif": "/status/404"])
        #expect(result.outcome == .complete)
        #expect(result.attachments.map(\.field) == ["_sw.media.fallback_url"])
        #expect(result.attachments.first?.source.hasSuffix("/media/photo.jpg") == true)
        #expect(result.attachments.first?.fallbackFor?.hasSuffix("/status/404") == true)
        #expect(result.attachments.first?.media.type == .jpeg)
        #expect(result.problems.map(\.code) == [.httpStatus])
        #expect(result.problems.first?.source.hasSuffix("/status/404") == true)
        #expect(
            result.problems.first?.detail.hasSuffix("its fallback _sw.media.fallback_url was fetched instead") == true)
        #expect(result.route?.url == "app://swrve/world/2/still")
        #expect(result.route?.urlSource?.key == "_sw.media.fallback_sd")
        #expect(alert(result)?["title"]?.stringValue == "World 2 is open")
        let json = try #require(result.attachments.first?.json.objectValue)
        #expect(json["fallback_for"]?.stringValue?.hasSuffix("/status/404") == true)
    }

    @Test(
        """
        Swrve: a primary that another convention names too (Adobe's adb_media, read first) keeps its fallback: one \
        reference for the URL, the fallback fetched when it fails
        """)
    func swrveFallbackOfSharedURL() async throws {
        let bed = try TestBed()
        let payload = try bed.payload(
            #"{"aps":{"alert":"a","mutable-content":1},"adb_media":"ORIGIN/status/404","_p":"1","#
                + #""_sw":{"media":{"url":"ORIGIN/status/404","fallback_url":"ORIGIN/media/photo.jpg"}}}"#)
        let result = try await withEnricher(bed.configuration) { await $0.enrich(payload, timeout: .seconds(30)) }
        #expect(result.outcome == .complete, "\(result.problems)")
        #expect(result.attachments.map(\.field) == ["_sw.media.fallback_url"])
        #expect(result.attachments.first?.fallbackFor?.hasSuffix("/status/404") == true)
        #expect(result.problems.map(\.code) == [.httpStatus])
    }

    @Test("Swrve: when the primary and the fallback both fail, nothing attaches, the route and alert text stay")
    func swrveFailed() async throws {
        let result = try await enrich("swrve.json", replacing: ["anim.gif": "/status/404", "photo.jpg": "/empty"])
        #expect(result.outcome == .failed)
        #expect(result.attachments.isEmpty)
        #expect(result.problems.count == 2)
        #expect(result.problems.first?.source.hasSuffix("/status/404") == true)
        #expect(result.problems.first?.detail.hasSuffix("was tried and failed too") == true, "\(result.problems)")
        #expect(result.problems.last?.source.hasSuffix("/empty") == true)
        #expect(result.route?.url == "app://swrve/world/2")
        #expect(alert(result)?["title"]?.stringValue == "Level up")
        #expect(alert(result)?["subtitle"] == nil)
        #expect(alert(result)?["body"]?.stringValue == "A new world awaits")
    }

    @Test("_mediaAlt and _sw.media's text that are not strings are bad-option, and change nothing")
    func wrongTypes() throws {
        let salesforce = ConventionRegistry.standard.scan(
            try PushPayload(parsing: Array(#"{"_mediaUrl":"https://a/1.jpg","_mediaAlt":3}"#.utf8)))
        #expect(salesforce.problems.map(\.code) == [.badOption])
        #expect(salesforce.problems.map(\.source) == ["_mediaAlt"])
        #expect(salesforce.overrides.isEmpty)
        let swrve = ConventionRegistry.standard.scan(
            try PushPayload(parsing: Array(#"{"_sw":{"media":{"url":"https://a/1.jpg","title":[]}}}"#.utf8)))
        #expect(swrve.problems.map(\.source) == ["_sw.media.title"])
        #expect(swrve.overrides.isEmpty)
    }
}
