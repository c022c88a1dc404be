import FixtureOrigin
import Foundation
import RichPushCore
import Testing

@testable import RichPush

@Suite("FCM HTTP v1 messages: media for iOS and Android from one message, against the loopback origin")
struct FCMMessageTests {
    func payload(_ text: String) throws -> PushPayload { try PushPayload(parsing: Array(text.utf8)) }

    @Test("a wrapped message: iOS's image attached, Android's video refused for Android, the message sendable as sent")
    func wrapped() async throws {
        let bed = try TestBed()
        let message = try bed.fcmMessageWithVideoForAndroid(
            apns: #"{"payload":{"aps":{"mutable-content":1}},"fcm_options":{"image":"URL"}}"#)
        let result = try await withEnricher(bed.configuration) { enricher in
            await enricher.enrich(message, timeout: .seconds(30))
        }
        #expect(result.format == PayloadFormat(.fcmV1, wrapped: true, decidedBy: "message.apns"))
        #expect(result.outcome == .partial)
        let ios = try #require(result.attachments.first)
        #expect(result.attachments.count == 1)
        #expect(ios.platform == .ios)
        #expect(ios.field == "message.apns.fcm_options.image")
        #expect(ios.source == bed.url("/media/logo.png"))
        #expect(ios.media.type == .png)
        let refused = try #require(result.problems.first)
        #expect(result.problems.count == 1)
        #expect(refused.code == .unsupportedType)
        #expect(refused.platform == .android)
        #expect(refused.source == bed.url("/media/clip.mp4"))
        #expect(refused.detail.contains("neither video nor audio"))
        // The content is the message as it came: nothing added (FCM refuses members it does not know).
        #expect(JSONWriter.string(try #require(result.content).json) == JSONWriter.string(message.json))
        // Nothing of the refused video is left.
        #expect(try FileManager.default.contentsOfDirectory(atPath: bed.configuration.store.root).count == 1)
    }

    @Test("notification.image alone: one download, an attachment per platform in a directory of its own")
    func sharedImage() async throws {
        let bed = try TestBed()
        let text =
            #"{"topic":"sales","notification":{"image":"\#(bed.url("/media/logo.png"))"},"#
            + #""apns":{"payload":{"aps":{"alert":"Hi"}}}}"#
        let result = try await withEnricher(bed.configuration) { enricher in
            await enricher.enrich(try payload(text), timeout: .seconds(30))
        }
        #expect(result.format == PayloadFormat(.fcmV1, decidedBy: "apns"))
        #expect(result.outcome == .complete, "\(result.problems)")
        #expect(result.attachments.map(\.platform) == [.ios, .android])
        #expect(result.attachments.map(\.field) == ["notification.image", "notification.image"])
        let (ios, android) = (result.attachments[0].media, result.attachments[1].media)
        #expect(ios.directory != android.directory)
        #expect(ios.sha256 == android.sha256, "a still 160 x 120 PNG of 1,046 bytes is an Android variant as it is")
        #expect(bed.origin.requestLog.filter { $0 == "/media/logo.png" }.count == 1)
        // No service extension would run on iOS: said once, for iOS.
        #expect(result.problems.map(\.code) == [.notMutable])
        #expect(result.problems.first?.source == "apns.payload.aps.mutable-content")
        #expect(result.problems.first?.platform == .ios)
    }

    @Test("an Android-only message needs no service extension: no not-mutable problem")
    func androidOnly() async throws {
        let bed = try TestBed()
        let text = #"{"token":"t","android":{"notification":{"image":"\#(bed.url("/media/logo.png"))"}}}"#
        let result = try await withEnricher(bed.configuration) { enricher in
            await enricher.enrich(try payload(text), timeout: .seconds(30))
        }
        #expect(result.outcome == .complete)
        #expect(result.problems.isEmpty)
        #expect(result.attachments.map(\.platform) == [.android])
    }

    @Test("a message with nothing to change comes back byte for byte, a key given twice included")
    func unchangedAsSent() async throws {
        let bed = try TestBed()
        let texts = [
            #"{"message":{"token":"first"},"message":{"token":"second"}}"#,
            #"{"message":{"token":"t","apns":{"payload":{"aps":{}}},"apns":{"headers":{}}}}"#,
            #"{"token":"t","android":{"notification":{"image":"\#(bed.url("/media/logo.png"))"}},"android":{}}"#,
        ]
        try await withEnricher(bed.configuration) { enricher in
            for text in texts {
                let result = await enricher.enrich(try payload(text), timeout: .seconds(30))
                #expect(result.content.map { JSONWriter.string($0.json) } == text, "\(result.outcome)")
            }
        }
    }

    /// A bed publishing to a new directory (the caller removes it) under https://cdn.test/m.
    func publishingBed() throws -> (TestBed, String) {
        let published = NSTemporaryDirectory() + "richpush-fcm-published-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: published, withIntermediateDirectories: true)
        let bed = try TestBed {
            $0.publisher = DirectoryPublisher(directory: published, baseURL: "https://cdn.test/m")
        }
        return (bed, published)
    }

    @Test("with publishing: each platform's own field set to its own published file, notification.image as sent")
    func published() async throws {
        let (bed, published) = try publishingBed()
        defer { try? FileManager.default.removeItem(atPath: published) }
        let sent = bed.url("/media/logo.png")
        let text =
            #"{"message":{"token":"t","notification":{"image":"\#(sent)"},"#
            + #""apns":{"payload":{"aps":{"mutable-content":1},"adb_media":"\#(bed.url("/media/photo.jpg"))"}}}}"#
        let result = try await withEnricher(bed.configuration) { enricher in
            await enricher.enrich(try payload(text), timeout: .seconds(30))
        }
        #expect(result.outcome == .complete, "\(result.problems)")
        let message = try #require(result.content?.root["message"]?.objectValue)
        let logo = result.attachments.first { $0.source == sent }!.media.sha256
        let photo = result.attachments.first { $0.source != sent }!.media.sha256
        #expect(message["notification"]?.objectValue?["image"]?.stringValue == sent)
        let apns = try #require(message["apns"]?.objectValue)
        #expect(apns["fcm_options"]?.objectValue?["image"]?.stringValue == "https://cdn.test/m/\(logo).png")
        #expect(
            apns["payload"]?.objectValue?["adb_media"]?.stringValue == "https://cdn.test/m/\(photo).jpg",
            "apns.payload's own conventions are rewritten as in an APNs payload")
        #expect(
            message["android"]?.objectValue?["notification"]?.objectValue?["image"]?.stringValue
                == "https://cdn.test/m/\(logo).png")
        #expect(result.content?.root["richpush"] == nil)
    }

    @Test("with publishing: a platform's object given as null is set as one absent (proto3 JSON reads null as unset)")
    func publishedOverNull() async throws {
        let (bed, published) = try publishingBed()
        defer { try? FileManager.default.removeItem(atPath: published) }
        let sent = bed.url("/media/logo.png")
        let text =
            #"{"message":{"token":"t","notification":{"image":"\#(sent)"},"android":{"notification":null},"#
            + #""apns":{"fcm_options":null,"payload":{"aps":{"mutable-content":1}}}}}"#
        let result = try await withEnricher(bed.configuration) { enricher in
            await enricher.enrich(try payload(text), timeout: .seconds(30))
        }
        #expect(result.outcome == .complete, "\(result.problems)")
        let message = try #require(result.content?.root["message"]?.objectValue)
        let logo = try #require(result.attachments.first?.media.sha256)
        #expect(
            message["apns"]?.objectValue?["fcm_options"]?.objectValue?["image"]?.stringValue
                == "https://cdn.test/m/\(logo).png")
        #expect(
            message["android"]?.objectValue?["notification"]?.objectValue?["image"]?.stringValue
                == "https://cdn.test/m/\(logo).png")
    }

    @Test("a campaign of FCM messages through stream: 40 messages over 3 images, each image fetched once")
    func campaign() async throws {
        let bed = try TestBed()
        let images = ["/media/photo.jpg", "/media/logo.png", "/media/photo.jpg?v=2"]
        let lines = (0..<40).map { i in
            #"{"message":{"token":"d\#(i)","notification":{"image":"\#(bed.url(images[i % 3]))"},"#
                + #""apns":{"payload":{"aps":{"mutable-content":1}}}}}"#
        }
        let run = try await CLI.run(
            ["stream", "--concurrency", "16"] + bed.cliOptions, stdin: lines.joined(separator: "\n") + "\n")
        #expect(run.status == 0, "\(run.stderr)")
        let results = run.lines
        #expect(results.count == 40)
        // Each message has media for both platforms (the images are Android variants as they are).
        #expect(results.allSatisfy { $0["outcome"] as? String == "complete" })
        let platforms = results.map {
            ($0["attachments"] as? [[String: Any]])?.compactMap { $0["platform"] as? String }
        }
        #expect(platforms.allSatisfy { $0 == ["ios", "android"] })
        for path in images {
            #expect(bed.origin.requestLog.filter { $0 == path }.count == 1, "\(path) fetched more than once")
        }
    }
}
