import Foundation
import RichPushCore
import RichPushTestSupport
import Testing

@testable import RichPushConventions

@Suite("Conventions")
struct ConventionTests {
    func scan(_ text: String) throws -> ConventionScan {
        ConventionRegistry.standard.scan(try PushPayload(parsing: Array(text.utf8)))
    }

    @Test("Adobe: top-level adb_media")
    func adobe() throws {
        let result = try scan(#"{"aps":{},"adb_media":"https://cdn.example/a.jpg"}"#)
        #expect(
            result.references == [
                MediaReference(
                    url: "https://cdn.example/a.jpg", convention: "adb_media", identifier: "adb_media",
                    field: "adb_media")
            ])
        #expect(result.problems.isEmpty)
    }

    @Test(
        "ZEGOCLOUD: payload as a JSON string or an object",
        arguments: [
            #"{"payload":"{\"image_attachment\":\"https://z.example/i.png\",\"x\":1}"}"#,
            #"{"payload":{"image_attachment":"https://z.example/i.png"}}"#,
        ])
    func zego(text: String) throws {
        let result = try scan(text)
        #expect(result.references.map(\.url) == ["https://z.example/i.png"])
        #expect(result.references.first?.convention == "zego")
        #expect(result.references.first?.field == "payload.image_attachment")
    }

    @Test(
        "no media is not a problem",
        arguments: [
            #"{"aps":{"alert":"x"}}"#,
            #"{"payload":"just words"}"#,
            #"{"payload":"[1,2]"}"#,
            #"{"payload":"{\"other\":1}"}"#,
            #"{"payload":42}"#,
            // A generic root key holding no object is another sender's: the vendor's SDK reads nothing there.
            #"{"data":"{\"order\":42}"}"#,
            #"{"body":"words"}"#,
            // A deep link in a generic key is not media either.
            #"{"data":"https://shop.example/sale","body":"https://shop.example/sale"}"#,
        ])
    func nothing(text: String) throws {
        let result = try scan(text)
        #expect(result.references.isEmpty)
        #expect(result.problems.isEmpty)
    }

    @Test(
        "a field of the wrong type is a bad-reference problem naming it",
        arguments: [
            (#"{"adb_media":42}"#, "adb_media holds a number"),
            (#"{"adb_media":{"url":"x"}}"#, "adb_media holds an object"),
            (#"{"payload":{"image_attachment":["x"]}}"#, "payload.image_attachment holds an array"),
            (#"{"payload":"{\"image_attachment\":null}"}"#, "payload.image_attachment holds null"),
            (#"{"adb_media":"https://a/\ud800.jpg"}"#, "adb_media escapes a lone UTF-16 surrogate"),
            (#"{"adb_media":"https://a/\udc00\ud83d.jpg"}"#, "adb_media escapes a lone UTF-16 surrogate"),
            (#"{"att":{"i":" https://a/\ud800.jpg"}}"#, "att.i escapes a lone UTF-16 surrogate"),
            // Inside the vendor's own object a step that is not one is reported, once for the URL and its type.
            (#"{"ab":{"att":["x"]}}"#, "ab.att holds an array; expected an object"),
            (#"{"body":{"_richContent":"x"}}"#, "body._richContent holds a string"),
        ])
    func wrongType(text: String, detail: String) throws {
        let result = try scan(text)
        #expect(result.references.isEmpty)
        #expect(result.problems.map(\.code) == [.badReference])
        #expect(result.problems.first?.detail.hasPrefix(detail) == true)
    }

    @Test(
        "a vendor's entry without its URL says the URL is missing, not that it holds null",
        arguments: [
            (
                #"{"com.urbanairship.media_attachment":{"urls":[{"url_id":"a"}]}}"#,
                "com.urbanairship.media_attachment.urls[0].url"
            ),
            (#"{"attachment":{"content-type":"jpeg"}}"#, "attachment.url"),
            (#"{"notifee_options":{"ios":{"attachments":[{"id":"x"}]}}}"#, "notifee_options.ios.attachments[0].url"),
        ])
    func missingURL(text: String, field: String) throws {
        let result = try scan(text)
        #expect(result.references.isEmpty)
        #expect(result.problems.map(\.code) == [.badReference])
        #expect(result.problems.first?.source == field)
        #expect(result.problems.first?.detail == "\(field) is missing; a media URL is a string")
    }

    @Test(
        "a URL escaping a surrogate pair, or a backslash before u, is a URL",
        arguments: [#"\ud83d\ude00"#, #"\\ud800"#])
    func surrogatePair(escaped: String) throws {
        let result = try scan(#"{"adb_media":"https://a/"# + escaped + #".jpg"}"#)
        #expect(result.problems.isEmpty)
        #expect(result.references.count == 1)
    }

    @Test("a Swrve fallback escaping a lone surrogate is refused, and the reference keeps no fallback")
    func fallbackSurrogate() throws {
        let result = try scan(#"{"_sw":{"media":{"url":"https://a/1.jpg","fallback_url":"https://a/\udc00.jpg"}}}"#)
        #expect(result.references.map(\.url) == ["https://a/1.jpg"])
        #expect(result.references.first?.fallback == nil)
        #expect(result.problems.map(\.source) == ["_sw.media.fallback_url"])
        #expect(result.problems.first?.detail.contains("lone UTF-16 surrogate") == true)
    }

    @Test("several references are kept in registry order; the same URL once")
    func order() throws {
        let result = try scan(
            #"{"payload":{"image_attachment":"https://b/2.png"},"adb_media":"https://a/1.jpg"}"#)
        #expect(result.references.map(\.url) == ["https://a/1.jpg", "https://b/2.png"])
        let same = try scan(#"{"payload":{"image_attachment":"https://a/1.jpg"},"adb_media":"https://a/1.jpg"}"#)
        #expect(same.references.map(\.convention) == ["adb_media"])
    }

    struct Custom: MediaConvention {
        var name: String { "custom" }
        func scan(_ payload: PushPayload) -> ConventionScan {
            var scan = ConventionScan()
            scan.take(payload.root["media"], field: "media", convention: name, identifier: "adb_media")
            return scan
        }
    }

    @Test("a registered convention runs after the others, identifiers stay unique")
    func custom() throws {
        var registry = ConventionRegistry.standard
        registry.register(Custom())
        let payload = try PushPayload(
            parsing: Array(#"{"media":"https://c/3.gif","adb_media":"https://a/1.jpg"}"#.utf8))
        let result = registry.scan(payload)
        #expect(result.references.map(\.url) == ["https://a/1.jpg", "https://c/3.gif"])
        #expect(result.references.map(\.identifier) == ["adb_media", "adb_media-2"])
    }

    @Test("a key written with escapes is found by what it means; the convention finds its media")
    func escapedKeyLookup() throws {
        let payload = try PushPayload(
            parsing: Array(#"{"aps":{"mutable\u002dcontent":1},"adb\u005fmedia":"https://m.example/a.jpg"}"#.utf8))
        #expect(payload.isMutable)
        #expect(payload.root["adb_media"]?.stringValue == "https://m.example/a.jpg")
        let scan = AdobeMediaConvention().scan(payload)
        #expect(scan.references.map(\.url) == ["https://m.example/a.jpg"])
        var content = payload
        content.root.set("adb_media", .text("https://m.example/b.jpg"))
        #expect(JSONWriter.string(content.json).contains(#""adb\u005fmedia":"https://m.example/b.jpg""#))
    }
}

@Suite("Airship and OneSignal conventions")
struct VendorConventionTests {
    func scan(_ text: String) throws -> ConventionScan {
        ConventionRegistry.standard.scan(try PushPayload(parsing: Array(text.utf8)))
    }

    @Test("Airship urls with url_id, thumbnail_id, options and content")
    func airship() throws {
        let text = try String(contentsOfFile: FixtureDirectory.payloads + "/airship.json", encoding: .utf8)
        let result = try scan(text)
        #expect(result.references.map(\.identifier) == ["hero", "loop"])
        #expect(result.references.allSatisfy { $0.convention == "airship" })
        #expect(result.references.map { $0.thumbnail?.primary } == [false, true])
        let clip = try #require(result.references.first?.thumbnail?.clip)
        #expect(clip == Thumbnail.Clip(x: 0.1, y: 0.2, width: 0.5, height: 0.5))
        #expect(result.references.first?.thumbnail?.time == 0)
        #expect(result.references.first?.thumbnail?.hidden == false)
        #expect(
            result.overrides.map { [$0.title, $0.subtitle, $0.body] } == [
                ["48 hours only", "Everything -30%", "Tap to shop"]
            ])
        // The text goes with the media: it applies only once both are attached.
        #expect(result.overrides.first?.requiredURLs == result.references.map(\.url))
        #expect(result.problems.isEmpty)
    }

    @Test(
        "Airship url as a string or an array; urls win over url",
        arguments: [
            (#"{"com.urbanairship.media_attachment":{"url":"https://a/1.jpg"}}"#, ["https://a/1.jpg"], ["airship"]),
            (
                #"{"com.urbanairship.media_attachment":{"url":["https://a/1.jpg","https://a/2.jpg"]}}"#,
                ["https://a/1.jpg", "https://a/2.jpg"], ["airship-1", "airship-2"]
            ),
            (
                #"{"com.urbanairship.media_attachment":{"url":"https://a/0.jpg","urls":[{"url":"https://a/3.jpg"}]}}"#,
                ["https://a/3.jpg"], ["airship"]
            ),
        ])
    func airshipURLs(text: String, urls: [String], identifiers: [String]) throws {
        let result = try scan(text)
        #expect(result.references.map(\.url) == urls)
        #expect(result.references.map(\.identifier) == identifiers)
    }

    @Test(
        "invalid Airship options are bad-option problems; the media is kept; a negative time is Airship's to accept",
        arguments: [
            (#"{"x":1.5,"y":0,"width":1,"height":1}"#, "crop"),
            (#"{"x":0,"y":0,"width":1}"#, "crop"),
        ])
    func airshipBadCrop(crop: String, named: String) throws {
        let result = try scan(
            #"{"com.urbanairship.media_attachment":{"url":"https://a/1.jpg","options":{"crop":\#(crop),"time":-1,"#
                + #""hidden":"yes"}}}"#
        )
        #expect(result.references.count == 1)
        #expect(result.references.first?.thumbnail == Thumbnail(time: -1))
        #expect(result.problems.map(\.code) == [.badOption, .badOption])
        #expect(result.problems.first?.source.hasSuffix(named) == true)
    }

    @Test("Airship wrong types are specific problems")
    func airshipWrongTypes() throws {
        #expect(
            try scan(#"{"com.urbanairship.media_attachment":"https://a/1.jpg"}"#).problems.map(\.code) == [
                .badReference
            ])
        #expect(
            try scan(#"{"com.urbanairship.media_attachment":{"urls":[7]}}"#).problems.map(\.code) == [.badReference])
        #expect(
            try scan(#"{"com.urbanairship.media_attachment":{"url":"https://a/1.jpg","content":{"title":3}}}"#).problems
                .map(\.code) == [.badOption])
    }

    @Test(
        "OneSignal att at the top level or under os_data, ids as identifiers",
        arguments: [
            (#"{"att":{"id1":"https://o/1.png","id2":"https://o/2.mp4"}}"#, ["id1", "id2"], "att.id1"),
            (
                #"{"os_data":{"att":{"box":"https://o/3.jpg"}},"att":{"x":"https://o/ignored.jpg"}}"#, ["box"],
                "os_data.att.box"
            ),
            (#"{"aps":{"content-available":1},"m":"hi","at":{"s":"https://o/4.jpg"}}"#, ["s"], "at.s"),
            (
                #"{"aps":{},"os_data":{"buttons":{"m":"hi","at":{"t":"https://o/5.jpg"}}}}"#, ["t"],
                "os_data.buttons.at.t"
            ),
            (
                #"{"aps":{"alert":"x"},"m":"hi","att":{"u":"https://o/6.jpg"},"at":{"v":"https://o/7.jpg"}}"#, ["u"],
                "att.u"
            ),
        ])
    func oneSignal(text: String, identifiers: [String], field: String) throws {
        let result = try scan(text)
        #expect(result.references.map(\.identifier) == identifiers)
        #expect(result.references.first?.field == field)
        #expect(result.references.allSatisfy { $0.convention == "onesignal" })
    }

    @Test("OneSignal att of the wrong type, or an entry that is not a URL string")
    func oneSignalWrongTypes() throws {
        #expect(try scan(#"{"att":"https://o/1.png"}"#).problems.map(\.code) == [.badReference])
        let mixed = try scan(#"{"att":{"a":"https://o/1.png","b":5}}"#)
        #expect(mixed.references.map(\.identifier) == ["a"])
        #expect(mixed.problems.map(\.source) == ["att.b"])
    }

    @Test("an OneSignal id written twice is read once, its last value, as the phone's dictionary keeps it")
    func oneSignalDuplicateIds() throws {
        let result = try scan(
            #"{"att":{"k":"https://o/1.png","j":"https://o/2.png","\u006b":"https://o/3.png","k":7}}"#)
        #expect(result.references.map(\.identifier) == ["j"])
        #expect(result.problems.map(\.source) == ["att.k"], "the last k is not a URL")
        // Ids differing in their scalars are two, as two NSString keys are (composed and decomposed).
        let twice = try scan(
            #"{"att":{"k":"https://o/1.png","k":"https://o/2.png","caf\u00e9":"https://o/3.png","#
                + #""cafe\u0301":"https://o/4.png"}}"#)
        #expect(twice.references.map(\.url) == ["https://o/2.png", "https://o/3.png", "https://o/4.png"])
    }

    @Test("an alert override removes the localization keys of the texts it replaces, and only those")
    func alertOverrideLocalized() throws {
        var payload = try PushPayload(
            parsing: Array(
                (#"{"aps":{"alert":{"title-loc-key":"T1","title-loc-args":["a"],"subtitle-loc-key":"S1","#
                    + #""loc-key":"B1","loc-args":[],"launch-image":"x"}}}"#).utf8))
        AlertOverride(title: "T", body: "B").apply(to: &payload)
        #expect(
            JSONWriter.string(payload.json)
                == #"{"aps":{"alert":{"subtitle-loc-key":"S1","launch-image":"x","title":"T","body":"B"}}}"#)
    }

    @Test("an alert override turns a string alert into an object and keeps other keys")
    func alertOverride() throws {
        var payload = try PushPayload(parsing: Array(#"{"aps":{"sound":"x","alert":"Sale","badge":1},"k":2}"#.utf8))
        AlertOverride(title: "T", body: "B").apply(to: &payload)
        #expect(
            JSONWriter.string(payload.json)
                == #"{"aps":{"sound":"x","alert":{"body":"B","title":"T"},"badge":1},"k":2}"#)
    }
}

@Suite("Declared types")
struct TypeHintTests {
    @Test(
        "hints in every form are judged against the sniffed type",
        arguments: [
            ("image", MediaType.jpeg, true as Bool?), ("video", .jpeg, false), ("JPG", .jpeg, true),
            (".jpeg", .jpeg, true),
            ("gif", .jpeg, false), ("image/jpeg", .jpeg, true), ("image/webp", .jpeg, false),
            ("public.mpeg-4", .mp4, true),
            ("audio", .m4a, true), ("mpg", .mpeg2, true), ("mp4", .m4a, false), ("banana", .png, nil),
            ("text/html", .png, nil),
        ])
    func matches(hint: String, type: MediaType, expected: Bool?) {
        #expect(type.matches(hint: hint) == expected)
    }

    @Test("Firebase and CleverTap key paths, with CleverTap's declared type as the hint")
    func keyPaths() throws {
        let payload = try PushPayload(
            parsing: Array(
                #"{"fcm_options":{"image":"https://f/1.jpg"},"ct_mediaUrl":"https://c/2.gif","ct_mediaType":"gif"}"#
                    .utf8))
        let result = ConventionRegistry.standard.scan(payload)
        #expect(result.references.map(\.convention) == ["fcm", "clevertap"])
        #expect(result.references.map(\.field) == ["fcm_options.image", "ct_mediaUrl"])
        #expect(result.references.map(\.typeHint) == [nil, "gif"])
        let wrong = ConventionRegistry.standard.scan(
            try PushPayload(
                parsing: Array(
                    #"{"fcm_options":"x","ct_mediaUrl":"https://c/2.gif","ct_mediaType":3}"#.utf8)))
        #expect(wrong.problems.map(\.code) == [.badReference, .badOption])
        #expect(wrong.references.count == 1)
    }
}

@Suite("Iterable, Customer.io, Pushwoosh and Batch conventions")
struct KeyPathConventionTests {
    func scan(_ text: String) throws -> ConventionScan {
        ConventionRegistry.standard.scan(try PushPayload(parsing: Array(text.utf8)))
    }

    @Test(
        "each vendor's key path",
        arguments: [
            (#"{"itbl":{"attachment-url":"https://i/1.png"}}"#, "iterable", "itbl.attachment-url", nil as String?),
            (#"{"CIO":{"push":{"image":"https://c/1.jpg"}}}"#, "customerio", "CIO.push.image", nil),
            (#"{"attachment":"https://p/1.wav"}"#, "pushwoosh", "attachment", nil),
            (
                #"{"com.batch":{"at":{"u":"https://b/1.mpg","t":"public.mpeg"}}}"#, "batch", "com.batch.at.u",
                "public.mpeg"
            ),
            (#"{"data":{"media-url":"https://a/1.m4a","pinpoint":{}}}"#, "amplify", "data.media-url", nil),
            (#"{"ab":{"att":{"url":"https://br/1.gif","type":"gif"}}}"#, "braze", "ab.att.url", "gif"),
        ])
    func keyPaths(text: String, convention: String, field: String, hint: String?) throws {
        let result = try scan(text)
        #expect(result.references.map(\.convention) == [convention])
        #expect(result.references.first?.field == field)
        #expect(result.references.first?.typeHint == hint)
        #expect(result.problems.isEmpty)
    }

    @Test(
        "wrong types along the path are specific problems",
        arguments: [
            (#"{"itbl":"https://i/1.png"}"#, "itbl"),
            (#"{"CIO":{"push":[1]}}"#, "CIO.push"),
            (#"{"attachment":42}"#, "attachment"),
            (#"{"com.batch":{"at":"https://b/1.mpg"}}"#, "com.batch.at"),
            // A vendor's own root holding something else than its object is the vendor's payload gone wrong.
            (#"{"_sw":5}"#, "_sw"), (#"{"ab":"{\"att\":{}}"}"#, "ab"), (#"{"moengage":"x"}"#, "moengage"),
        ])
    func wrongTypes(text: String, source: String) throws {
        let result = try scan(text)
        #expect(result.references.isEmpty)
        #expect(result.problems.map(\.code) == [.badReference])
        #expect(result.problems.first?.source == source)
    }

    @Test("an attachment object is Home Assistant's shape: Pushwoosh leaves it alone")
    func attachmentObject() throws {
        let result = try scan(#"{"attachment":{"url":"https://h/1.jpg"}}"#)
        #expect(result.references.map(\.convention) == ["home_assistant"])
        #expect(result.problems.isEmpty)
    }
}

@Suite("Notifee convention")
struct NotifeeConventionTests {
    func scan(_ text: String) throws -> ConventionScan {
        ConventionRegistry.standard.scan(try PushPayload(parsing: Array(text.utf8)))
    }

    @Test("ios.attachments take precedence over image; ids, type hints and thumbnail options are kept")
    func attachments() throws {
        let result = try scan(
            #"{"notifee_options":{"image":"https://n/0.png","ios":{"attachments":[{"id":"a","url":"https://n/1.jpg","#
                + #""typeHint":"public.jpeg","thumbnailHidden":true},{"url":"https://n/2.mp4","thumbnailTime":2}]}}}"#
        )
        #expect(result.references.map(\.url) == ["https://n/1.jpg", "https://n/2.mp4"])
        #expect(result.references.map(\.identifier) == ["a", "notifee-2"])
        #expect(result.references.map(\.typeHint) == ["public.jpeg", nil])
        #expect(result.references.map { $0.thumbnail } == [Thumbnail(hidden: true), Thumbnail(time: 2)])
    }

    @Test("image alone, in an object or a JSON string")
    func image() throws {
        #expect(
            try scan(#"{"notifee_options":{"image":"https://n/0.png"}}"#).references.map(\.field) == [
                "notifee_options.image"
            ])
        #expect(
            try scan(#"{"notifee_options":"{\"image\":\"https://n/0.png\"}"}"#).references.map(\.url) == [
                "https://n/0.png"
            ])
        #expect(try scan(#"{"notifee_options":"not json"}"#).references.isEmpty)
    }

    @Test("wrong types and invalid options are specific problems")
    func problems() throws {
        #expect(try scan(#"{"notifee_options":5}"#).problems.map(\.code) == [.badReference])
        let bad = try scan(
            #"{"notifee_options":{"ios":{"attachments":[7,{"url":"https://n/1.jpg","thumbnailClippingRect":{"x":2},"#
                + #""thumbnailTime":-1,"thumbnailHidden":"no"}]}}}"#
        )
        #expect(bad.references.count == 1)
        #expect(bad.problems.map(\.code) == [.badReference, .badOption, .badOption, .badOption])
    }
}

@Suite("Home Assistant convention")
struct HomeAssistantConventionTests {
    func scan(_ text: String) throws -> ConventionScan {
        ConventionRegistry.standard.scan(try PushPayload(parsing: Array(text.utf8)))
    }

    @Test("url, content-type as the hint, hide-thumbnail as the thumbnail")
    func attachment() throws {
        let result = try scan(#"{"attachment":{"url":"https://h/1.mp4","content-type":"mpeg4","hide-thumbnail":true}}"#)
        #expect(result.references.map(\.convention) == ["home_assistant"])
        #expect(result.references.first?.typeHint == "mpeg4")
        #expect(result.references.first?.thumbnail == Thumbnail(hidden: true))
        #expect(MediaType.mp4.matches(hint: "mpeg4") == true)
        #expect(MediaType.wav.matches(hint: "waveformaudio") == true)
    }

    @Test("a URL relative to the Home Assistant instance is bad-url; wrong types are bad-option")
    func problems() throws {
        let relative = try scan(#"{"attachment":{"url":"/api/camera_proxy/camera.door"}}"#)
        #expect(relative.references.isEmpty)
        #expect(relative.problems.map(\.code) == [.badURL])
        let wrong = try scan(#"{"attachment":{"url":"https://h/1.jpg","content-type":3,"hide-thumbnail":"yes"}}"#)
        #expect(wrong.references.count == 1)
        #expect(wrong.problems.map(\.code) == [.badOption, .badOption])
    }
}
