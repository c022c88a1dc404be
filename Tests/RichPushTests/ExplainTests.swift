import FixtureOrigin
import Foundation
import Testing

@testable import RichPush

@Suite("explain: why is there no image?")
struct ExplainTests {
    @Test("each reference gets a verdict from headers and first bytes, and nothing is stored")
    func verdicts() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let payload = try bed.payload(
                #"""
                {"aps":{"alert":"x"},"adb_media":"ORIGIN/media/clip.mp4",
                 "payload":{"image_attachment":"ORIGIN/media/error-page.html?type=image/jpeg"},
                 "fcm_options":{"image":"ORIGIN/media/clip.mp4"},"att":{"a":"ORIGIN/status/404","b":7},
                 "ct_mediaUrl":"ORIGIN/generated?prefix=photo.jpg&bytes=20000000&nolength=1"}
                """#)
            let explanation = await enricher.explain(payload, deadline: .now + .seconds(30))
            #expect(!explanation.mutable)
            let byName = Dictionary(uniqueKeysWithValues: explanation.conventions.map { ($0.name, $0) })
            #expect(byName["adb_media"]?.findings.first?.verdict == .attach(.mp4, bytes: fixture("clip.mp4").count))
            guard case .refuse(let code, let detail)? = byName["zego"]?.findings.first?.verdict else {
                Issue.record("zego: \(String(describing: byName["zego"]?.findings))")
                return
            }
            #expect(code == .unsupportedType)
            #expect(detail.contains("text/html"))
            #expect(byName["fcm"]?.findings.first?.verdict == .duplicate(of: "adb_media"))
            #expect(
                byName["onesignal"]?.findings.first.map {
                    if case .refuse(.httpStatus, _) = $0.verdict { true } else { false }
                } == true)
            #expect(byName["onesignal"]?.problems.map(\.code) == [.badReference])
            // A 20 MB image without a length: the probe stops after the first bytes, so the cap is not reached.
            #expect(
                byName["clevertap"]?.findings.first.map {
                    if case .attach(.jpeg, _) = $0.verdict { true } else { false }
                } == true)
            #expect(byName["airship"]?.matched == false)
            #expect(bed.entriesOnDisk().isEmpty)
            #expect(bed.cacheFiles().isEmpty)
            let text = explanation.text(input: "p.json")
            #expect(text.contains("would attach: public.mpeg-4"))
            #expect(text.contains("would NOT attach: unsupported-type"))
            #expect(text.contains("the service extension would not run"))
            #expect(text.contains("not present: airship"))
        }
    }

    @Test("the CLI prints text by default and JSON with --json; invalid input exits 1")
    func cli() async throws {
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let good = try bed.payloadFile("airship.json", directory: directory)
        let bad = try bed.payloadFile("invalid/not-json.json", directory: directory)
        let text = try await CLI.run(["explain"] + bed.cliOptions + [good])
        #expect(text.status == 0)
        #expect(text.stdout.contains("airship:"))
        #expect(text.stdout.contains("would attach: com.compuserve.gif"))
        let json = try await CLI.run(["explain", "--json"] + bed.cliOptions + [good, bad])
        #expect(json.status == 1)
        #expect(json.lines.count == 2)
        let conventions = json.lines.first?["conventions"] as? [[String: Any]]
        #expect(conventions?.map { $0["name"] as? String } == ["airship"])
        let references = conventions?.first?["references"] as? [[String: Any]]
        #expect(references?.map { $0["verdict"] as? String } == ["attach", "attach"])
        #expect((json.lines.last?["invalid"] as? [String: Any])?["code"] as? String == "not-json")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: bed.attachments)) ?? []).isEmpty)
    }

    @Test("an FCM v1 message is explained as enrich reads it: its own fields per platform, then apns.payload's")
    func fcmMessage() async throws {
        let bed = try TestBed()
        let message = try bed.fcmMessageWithVideoForAndroid(
            apns: #"{"payload":{"aps":{"mutable-content":1},"adb_media":"URL"}}"#)
        let explanation = try await withEnricher(bed.configuration) { enricher in
            await enricher.explain(message, deadline: .now + .seconds(30))
        }
        #expect(explanation.format == PayloadFormat(.fcmV1, wrapped: true, decidedBy: "message.apns"))
        #expect(explanation.mutable)
        let matched = explanation.conventions.filter(\.matched)
        #expect(matched.map(\.name) == ["fcm_v1", "adb_media"])
        let own = try #require(matched.first).findings
        #expect(own.map(\.reference.field) == ["message.notification.image", "message.android.notification.image"])
        #expect(own.map(\.reference.platform) == [.ios, .android])
        #expect(own.first?.verdict == .attach(.jpeg, bytes: 5905))
        guard case .refuse(let code, let detail)? = own.last?.verdict else {
            Issue.record("Android's video not refused: \(String(describing: own.last?.verdict))")
            return
        }
        #expect(code == .unsupportedType)
        #expect(detail.contains("neither video nor audio"))
        #expect(matched.last?.findings.map(\.reference.field) == ["message.apns.payload.adb_media"])
        let lines = explanation.text(input: "m.json")
        #expect(lines.hasPrefix("m.json (an FCM v1 message, decided by message.apns)\n"))
        #expect(lines.contains("  message.apns.payload.aps.mutable-content is 1: the service extension runs\n"))
        #expect(lines.contains("    message.android.notification.image (android) "))
    }
}
