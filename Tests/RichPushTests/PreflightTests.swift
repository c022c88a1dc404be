import FixtureOrigin
import Foundation
import RichPushCore
import RichPushTestSupport
import RichPushTransform
import Testing

@testable import RichPush

@Suite("Preflight: what each phone will show, checked before a send, against the loopback origin")
struct PreflightTests {
    func payload(_ text: String) throws -> PushPayload { try PushPayload(parsing: Array(text.utf8)) }

    @Test("a verdict per reference: attached as sent, after a transformation, refused; nothing kept")
    func verdicts() async throws {
        let bed = try TestBed { $0.transform.converter = VipsConverter() }
        let text =
            #"{"aps":{"alert":"Sale","mutable-content":1},"adb_media":"\#(bed.url("/media/photo.jpg"))","#
            + #""payload":{"image_attachment":"\#(bed.url("/media/banner.webp"))"},"#
            + #""ct_mediaUrl":"\#(bed.url("/media/error-page.html"))"}"#
        let preflight = try await withEnricher(bed.configuration) { enricher in
            await enricher.preflight(try payload(text), deadline: .now + .seconds(60))
        }
        #expect(preflight.format?.name == .apns)
        #expect(preflight.verdicts.map(\.field) == ["adb_media", "payload.image_attachment", "ct_mediaUrl"])
        #expect(preflight.verdicts.map(\.platform) == [.ios, .ios, .ios])
        #expect(preflight.verdicts[0].outcome == .attached)
        #expect(preflight.verdicts[0].media?.dimensions == ImageSize(width: 160, height: 120))
        #expect(preflight.verdicts[1].outcome == .transformed([.transcoded, .metadataStripped]))
        #expect(preflight.verdicts[1].media?.type == .jpeg)
        guard case .refused(let code, _) = preflight.verdicts[2].outcome else {
            Issue.record("the HTML page was not refused: \(preflight.verdicts[2].outcome)")
            return
        }
        #expect(code == .unsupportedType)
        #expect(!preflight.ready)
        #expect(preflight.problems.isEmpty)
        // Judged, then removed: nothing of the three is left.
        #expect(bed.filesOnDisk().isEmpty, "\(bed.filesOnDisk())")
    }

    @Test(
        """
        publishing failed: media the phone can use as sent still reaches (noted); media that had to be transcoded or \
        downscaled does not, since the payload to send keeps the sender's URL
        """)
    func publicationFailed() async throws {
        let bed = try TestBed {
            $0.transform.converter = VipsConverter()
            // No directory can be made under /dev/null: every publication fails.
            $0.publisher = DirectoryPublisher(directory: "/dev/null/published", baseURL: "https://cdn.example")
        }
        let text =
            #"{"aps":{"alert":"Sale","mutable-content":1},"adb_media":"\#(bed.url("/media/photo.jpg"))","#
            + #""payload":{"image_attachment":"\#(bed.url("/media/banner.webp"))"}}"#
        let preflight = try await withEnricher(bed.configuration) { enricher in
            await enricher.preflight(try payload(text), deadline: .now + .seconds(60))
        }
        #expect(preflight.verdicts[0].outcome == .attached)
        #expect(preflight.verdicts[0].notes.map(\.code) == [.publishFailed])
        guard case .refused(let code, let detail) = preflight.verdicts[1].outcome else {
            Issue.record("the WebP reaches though its JPEG was not published: \(preflight.verdicts[1].outcome)")
            return
        }
        #expect(code == .publishFailed)
        #expect(
            detail.hasPrefix(
                "the payload keeps the sender's URL, whose media a phone cannot use as it is (it "
                    + "needed: transcoded): cannot make /dev/null/published"), "\(detail)")
        #expect(preflight.verdicts[1].notes.isEmpty)
        #expect(!preflight.ready)
        #expect(preflight.text(input: "p").contains("NO ios payload.image_attachment: refused, publish-failed"))
    }

    @Test(
        """
        publishing failed: an FCM image over FCM's 1 MiB whose Android variant was only re-encoded smaller \
        (metadata-stripped) does not reach Android, which gets the original; iOS, which takes it as sent, is noted
        """)
    func publicationFailedOverFCMLimit() async throws {
        // photo.jpg (160 x 120) with 18 comment segments of 64 KiB before its picture: 1.2 MB, within the Android
        // bound on a side, over FCM's limit.
        let media = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: media) }
        let photo = Array(FileManager.default.contents(atPath: FixtureRoutes.fixturesDirectory + "/media/photo.jpg")!)
        let comment: [UInt8] = [0xFF, 0xFE, 0xFF, 0xFF] + [UInt8](repeating: 0x41, count: 65_533)
        let padded = Array(photo.prefix(2)) + Array(repeating: comment, count: 18).flatMap { $0 } + photo.dropFirst(2)
        #expect(padded.count > AndroidVariant.maximumBytes)
        try Data(padded).write(to: URL(fileURLWithPath: media + "/padded.jpg"))
        let bed = try TestBed(media: media) {
            $0.transform.converter = VipsConverter()
            $0.publisher = DirectoryPublisher(directory: "/dev/null/published", baseURL: "https://cdn.example")
        }
        let text =
            #"{"message":{"token":"t","notification":{"image":"\#(bed.url("/media/padded.jpg"))"},"#
            + #""apns":{"payload":{"aps":{"mutable-content":1}}}}}"#
        let preflight = try await withEnricher(bed.configuration) { enricher in
            await enricher.preflight(try payload(text), deadline: .now + .seconds(60))
        }
        #expect(preflight.verdicts.map(\.platform) == [.ios, .android])
        #expect(preflight.verdicts[0].reaches)
        #expect(preflight.verdicts[0].notes.map(\.code) == [.publishFailed])
        guard case .refused(let code, let detail) = preflight.verdicts[1].outcome else {
            Issue.record("Android reaches though its variant was not published: \(preflight.verdicts[1].outcome)")
            return
        }
        #expect(code == .publishFailed)
        #expect(detail.contains("(it needed: \(padded.count) bytes made within FCM's Android limit"), "\(detail)")
        #expect(!preflight.ready)
    }

    @Test("every reference reaching every platform is ready; not-mutable is not, whatever the references did")
    func ready() async throws {
        let bed = try TestBed()
        let fine = #"{"aps":{"alert":"x","mutable-content":1},"adb_media":"\#(bed.url("/media/photo.jpg"))"}"#
        let silent = #"{"aps":{"alert":"x"},"adb_media":"\#(bed.url("/media/photo.jpg"))"}"#
        let (ok, notMutable) = try await withEnricher(bed.configuration) { enricher in
            (
                await enricher.preflight(try payload(fine), deadline: .now + .seconds(60)),
                await enricher.preflight(try payload(silent), deadline: .now + .seconds(60))
            )
        }
        #expect(ok.ready)
        #expect(notMutable.verdicts.allSatisfy { $0.reaches })
        #expect(notMutable.problems.map(\.code) == [.notMutable])
        #expect(!notMutable.ready)
    }

    @Test(
        """
        a mutable payload with media for iOS that shows no alert is not ready (no-alert): iOS runs no service \
        extension for it; an alert string or object, or an FCM notification's title or body, is one
        """,
        arguments: [
            (#"{"aps":{"mutable-content":1,"content-available":1},"adb_media":"URL"}"#, "aps.alert"),
            (#"{"aps":{"alert":"","mutable-content":1},"adb_media":"URL"}"#, "aps.alert"),
            (#"{"aps":{"alert":{},"mutable-content":1},"adb_media":"URL"}"#, "aps.alert"),
            (#"{"aps":{"alert":{"title":"Sale"},"mutable-content":1},"adb_media":"URL"}"#, nil),
            (
                #"{"message":{"token":"t","notification":{"image":"URL"},"#
                    + #""apns":{"payload":{"aps":{"mutable-content":1}}}}}"#, "message.apns.payload.aps.alert"
            ),
            (
                #"{"message":{"token":"t","notification":{"body":"b","image":"URL"},"#
                    + #""apns":{"payload":{"aps":{"mutable-content":1}}}}}"#, nil
            ),
            (
                #"{"message":{"token":"t","notification":{"image":"URL"},"#
                    + #""apns":{"payload":{"aps":{"alert":"a","mutable-content":1}}}}}"#, nil
            ),
        ] as [(String, String?)])
    func noAlert(text: String, missing: String?) async throws {
        // A converter for the FCM message's Android variant (photo.jpg's metadata stripped).
        let bed = try TestBed { $0.transform.converter = VipsConverter() }
        let payload = try payload(text.replacingOccurrences(of: "URL", with: bed.url("/media/photo.jpg")))
        let preflight = try await withEnricher(bed.configuration) { enricher in
            await enricher.preflight(payload, deadline: .now + .seconds(60))
        }
        #expect(preflight.verdicts.allSatisfy { $0.reaches })
        #expect(preflight.problems.map(\.source) == (missing.map { [$0] } ?? []), "\(preflight.problems)")
        #expect(preflight.problems.allSatisfy { $0.code == .noAlert })
        #expect(preflight.ready == (missing == nil))
    }

    @Test("a field holding no URL past the 64 listed problems still keeps the payload from being ready")
    func hiddenBadReference() async throws {
        let bed = try TestBed()
        // 70 Airship entries with a url_id that is no string (bad-option each), then one whose url is a number.
        let entries = (0..<70).map { _ in #"{"url":"\#(bed.url("/media/photo.jpg"))","url_id":7}"# }
        let text =
            #"{"aps":{"mutable-content":1},"com.urbanairship.media_attachment":{"urls":["#
            + entries.joined(separator: ",") + #",{"url":12345}]}}"#
        let preflight = try await withEnricher(bed.configuration) { enricher in
            await enricher.preflight(try payload(text), deadline: .now + .seconds(60))
        }
        #expect(preflight.problems.contains { $0.code == .tooManyProblems }, "the bad reference is past the cap")
        #expect(!preflight.problems.contains { $0.code == .badReference })
        #expect(!preflight.ready)
    }

    @Test("an FCM message: a verdict per platform; the URL's missing extension noted; refused video for Android")
    func platforms() async throws {
        let bed = try TestBed()
        let generated = bed.url("/generated?prefix=photo.jpg&bytes=3000")
        let text =
            #"{"message":{"token":"t","notification":{"title":"Sale","image":"\#(generated)"},"#
            + #""android":{"notification":{"image":"\#(bed.url("/media/clip.mp4"))"}},"#
            + #""apns":{"payload":{"aps":{"mutable-content":1}}}}}"#
        let preflight = try await withEnricher(bed.configuration) { enricher in
            await enricher.preflight(try payload(text), deadline: .now + .seconds(60))
        }
        #expect(preflight.verdicts.map(\.platform) == [.ios, .android])
        #expect(preflight.verdicts[0].reaches)
        #expect(preflight.verdicts[0].lacksExtension)
        #expect(!preflight.verdicts[1].lacksExtension)
        #expect(!preflight.verdicts[1].reaches)
        #expect(preflight.problems.isEmpty, "the Android refusal is the verdict's, not the payload's")
        let json = JSONWriter.string(preflight.json(input: "m.json"))
        #expect(json.hasPrefix(#"{"input":"m.json","format":{"name":"fcm-v1","decided_by":"message.apns","#))
        #expect(json.contains(#""verdict":"refused","code":"unsupported-type""#))
        #expect(json.contains(#""extension_in_url":false"#))
    }

    @Test("where the fetch went and what the origin said: the redirects, a Content-Type the bytes contradict")
    func provenance() async throws {
        let bed = try TestBed()
        let text =
            #"{"aps":{"alert":"x","mutable-content":1},"#
            + #""adb_media":"\#(bed.url("/redirect/2?to=/media/photo.jpg?type=text/plain"))","#
            + #""ct_mediaUrl":"\#(bed.url("/media/logo.png"))"}"#
        let preflight = try await withEnricher(bed.configuration) { enricher in
            await enricher.preflight(try payload(text), deadline: .now + .seconds(60))
        }
        #expect(preflight.verdicts.allSatisfy { $0.reaches })
        let (moved, direct) = (preflight.verdicts[0], preflight.verdicts[1])
        #expect(moved.media?.provenance?.redirects.count == 2)
        #expect(moved.contentTypeAgrees == false)
        #expect(direct.contentTypeAgrees == true)
        let lines = preflight.text(input: "p.json").split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("        redirected: ") && $0.contains(" -> ") })
        #expect(lines.contains { $0.contains("the origin sent Content-Type text/plain; the bytes are image/jpeg") })
        let json = JSONWriter.string(preflight.json(input: nil))
        #expect(json.contains(#""content_type_sent":"text/plain","content_type_agrees":false"#))
        #expect(json.contains(#""redirects":[],"content_type_sent":"image/png","content_type_agrees":true"#))
    }

    @Test(
        "the URL's file extension, as a service extension that names the file after it reads it",
        arguments: [
            ("https://cdn.test/a/photo.jpg", false), ("https://cdn.test/a/photo.JPEG?w=1#x", false),
            ("https://cdn.test/img?id=7.jpg", true), ("https://cdn.test/", true), ("https://cdn.test", true),
            ("https://cdn.test/v1.2/photo", true), ("https://cdn.test/photo.", true),
            ("https://cdn.test/a.b/c.webp", false),
        ])
    func extensions(url: String, lacks: Bool) {
        #expect(Preflight.Verdict.lacksExtension(url) == lacks)
    }

    @Test("richpush preflight: text, exit 0 ready and 1 not, --json, 120 s deadline, ready to send with publishing")
    func cli() async throws {
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let good = directory + "/good.json"
        try Data(#"{"aps":{"alert":"x","mutable-content":1},"adb_media":"\#(bed.url("/media/photo.jpg"))"}"#.utf8)
            .write(to: URL(fileURLWithPath: good))
        let bad = try bed.adobePayloadFile("/status/404", in: directory, named: "bad.json")
        let ready = try await CLI.run(["preflight"] + bed.cliOptions + [good])
        #expect(ready.status == 0, "\(ready.stderr)")
        #expect(ready.stdout.hasPrefix("\(good) (apns, decided by aps): ready, 1 of 1 will show\n"))
        #expect(ready.stdout.contains("  ok ios adb_media: attached as sent: public.jpeg, 5905 bytes, 160 x 120\n"))
        let notReady = try await CLI.run(["preflight", "--json"] + bed.cliOptions + [good, bad])
        #expect(notReady.status == 1)
        let lines = notReady.stdout.split(separator: "\n").map { try? JSONParser().parse(Array($0.utf8)) }
        #expect(lines.map { $0?.objectValue?["ready"] } == [.bool(true), .bool(false)])
        let help = try await CLI.run(["preflight", "--help"])
        let deadline = CLITests.helpEntries(help.stdout).first { $0.option == "--deadline" }?.entry
        #expect(deadline?.contains("default: 120)") == true, "\(deadline ?? help.stdout)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: bed.attachments).allSatisfy { $0.hasPrefix(".") })
        // With publishing, the payload ready to send: each media URL its published copy.
        let published = directory + "/published"
        try FileManager.default.createDirectory(atPath: published, withIntermediateDirectories: true)
        let run = try await CLI.run(
            ["preflight"] + bed.cliOptions + ["--publish-dir", published, "--publish-url", "https://cdn.test/m", good])
        #expect(run.status == 0, "\(run.stderr)")
        let sha = try #require(try FileManager.default.contentsOfDirectory(atPath: published).first)
        #expect(run.stdout.contains("  ready to send:\n"))
        #expect(
            run.stdout.hasSuffix(
                #"{"aps":{"alert":"x","mutable-content":1},"adb_media":"https://cdn.test/m/\#(sha)"}"# + "\n"))
    }
}
