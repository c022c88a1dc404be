import RichPushCore
import Testing

@testable import RichPushConventions

@Suite("Input formats: an APNs payload or an FCM v1 message, told apart by shape")
struct PayloadFormatTests {
    func format(_ text: String) throws -> PayloadFormat {
        PayloadFormat.detect(try PushPayload(parsing: Array(text.utf8)))
    }

    @Test(
        "each rule, in order, and the member that decided",
        arguments: [
            (#"{"aps":{"alert":"x"},"message":{"token":"t"}}"#, PayloadFormat(.apns, decidedBy: "aps")),
            (#"{"message":{"token":"t","apns":{}}}"#, PayloadFormat(.fcmV1, wrapped: true, decidedBy: "message.apns")),
            (
                #"{"message":{"token":"t","data":{"k":"v"}},"validate_only":true}"#,
                PayloadFormat(.fcmV1, wrapped: true, decidedBy: "message.token")
            ),
            (#"{"android":{"notification":{}}}"#, PayloadFormat(.fcmV1, decidedBy: "android")),
            (#"{"apns":{"payload":{}},"topic":"news"}"#, PayloadFormat(.fcmV1, decidedBy: "apns")),
            (
                #"{"notification":{"image":"https://a/1.jpg"},"condition":"'a' in topics"}"#,
                PayloadFormat(.fcmV1, decidedBy: "notification and condition")
            ),
            // Without a target, a `notification` object is any sender's key: read as APNs.
            (
                #"{"notification":{"image":"https://a/1.jpg"}}"#,
                PayloadFormat(.apns, decidedBy: "no aps and no FCM v1 member: read as APNs")
            ),
            // A `message` that is not an FCM Message, and an `apns` that is not an object.
            (
                #"{"message":"hello","apns":"x"}"#,
                PayloadFormat(.apns, decidedBy: "no aps and no FCM v1 member: read as APNs")
            ),
        ])
    func rules(text: String, expected: PayloadFormat) throws {
        #expect(try format(text) == expected)
    }

    @Test("an FCM message's references per platform: iOS's own field first, then apns.payload's conventions")
    func references() throws {
        let payload = try PushPayload(
            parsing: Array(
                (#"{"message":{"notification":{"image":"https://n/0.jpg"},"#
                    + #""apns":{"fcm_options":{"image":"https://i/1.png"},"#
                    + #""payload":{"aps":{"mutable-content":1},"adb_media":"https://i/2.jpg","x":{"image":7}}},"#
                    + #""android":{"notification":{"image":"https://a/3.jpg"}}}}"#).utf8))
        let message = try #require(FCMMessage(payload, format: PayloadFormat.detect(payload)))
        let scan = message.scan(with: .standard)
        #expect(scan.references.map(\.url) == ["https://i/1.png", "https://i/2.jpg", "https://a/3.jpg"])
        #expect(scan.references.map(\.platform) == [.ios, .ios, .android])
        #expect(
            scan.references.map(\.field) == [
                "message.apns.fcm_options.image", "message.apns.payload.adb_media",
                "message.android.notification.image",
            ])
        #expect(scan.references.map(\.convention) == ["fcm_v1", "adb_media", "fcm_v1"])
        #expect(Set(scan.references.map(\.identifier)).count == 3)
    }

    @Test("notification.image alone serves both platforms: one reference each, the same URL")
    func sharedImage() throws {
        let payload = try PushPayload(
            parsing: Array(#"{"token":"t","notification":{"image":"https://n/0.jpg"},"apns":{}}"#.utf8))
        let message = try #require(FCMMessage(payload, format: PayloadFormat.detect(payload)))
        let scan = message.scan(with: .standard)
        #expect(scan.references.map(\.platform) == [.ios, .android])
        #expect(scan.references.map(\.url) == ["https://n/0.jpg", "https://n/0.jpg"])
        #expect(scan.references.map(\.field) == ["notification.image", "notification.image"])
        #expect(scan.problems.isEmpty)
    }

    @Test("null is a field not set, as FCM's proto3 JSON reads it: each platform falls back to notification.image")
    func nullFields() throws {
        for text in [
            #"{"message":{"notification":{"image":"https://n/0.jpg"},"apns":{"fcm_options":{"image":null}},"#
                + #""android":{"notification":{"image":null}}}}"#,
            #"{"message":{"notification":{"image":"https://n/0.jpg"},"apns":{"fcm_options":null},"android":null}}"#,
        ] {
            let payload = try PushPayload(parsing: Array(text.utf8))
            let message = try #require(FCMMessage(payload, format: PayloadFormat.detect(payload)))
            let scan = message.scan(with: .standard)
            #expect(scan.references.map(\.url) == ["https://n/0.jpg", "https://n/0.jpg"], "\(text)")
            #expect(scan.references.map(\.platform) == [.ios, .android])
            #expect(scan.problems.isEmpty, "\(scan.problems)")
        }
    }

    @Test("fields of the wrong kind are bad-reference problems for their platform, named from the input's root")
    func wrongKinds() throws {
        let payload = try PushPayload(
            parsing: Array(
                (#"{"message":{"apns":"x","notification":{"image":"https://n/0.jpg"},"#
                    + #""android":{"notification":{"image":7}}}}"#).utf8))
        let message = try #require(FCMMessage(payload, format: PayloadFormat.detect(payload)))
        let scan = message.scan(with: .standard)
        // iOS falls back to notification.image; Android's own field is there, and wrong.
        #expect(scan.references.map(\.url) == ["https://n/0.jpg"])
        #expect(scan.problems.map(\.source) == ["message.apns", "message.android.notification.image"])
        #expect(scan.problems.map(\.code) == [.badReference, .badReference])
        #expect(scan.problems.map(\.platform) == [.ios, .android])
    }

    @Test("the message's mutations: a field set through objects made where missing, the wrapper kept")
    func mutations() throws {
        let text = #"{"message":{"token":"t","notification":{"image":"https://n/0.jpg"}},"validate_only":false}"#
        let payload = try PushPayload(parsing: Array(text.utf8))
        var message = try #require(FCMMessage(payload, format: PayloadFormat.detect(payload)))
        message.set("https://cdn/1.jpg", at: ["android", "notification", "image"])
        let written = message.written(into: payload)
        #expect(
            JSONWriter.string(written.json)
                == #"{"message":{"token":"t","notification":{"image":"https://n/0.jpg"},"#
                + #""android":{"notification":{"image":"https://cdn/1.jpg"}}},"validate_only":false}"#)
    }
}
