import Foundation
import RichPushCore
import RichPushTestSupport
import Testing

@testable import RichPushConventions

@Suite("Routes")
struct RouteTests {
    func route(_ text: String, keys: DeepLinkRoute.Keys = DeepLinkRoute.Keys()) throws -> DeepLinkRoute? {
        let payload = try PushPayload(parsing: Array(text.utf8))
        let registry = ConventionRegistry.standard
        let scan = registry.scan(payload)
        let matched = registry.conventions.filter { c in scan.references.contains { $0.convention == c.name } }
        return DeepLinkRoute.find(in: payload, conventions: matched, keys: keys)
    }

    @Test(
        "the route comes from the matched conventions' custom data, then the root",
        arguments: [
            (
                #"{"com.batch":{"l":"app://match/7","at":{"u":"https://b/1.jpg","t":"public.jpeg"}}}"#, nil as String?,
                "app://match/7" as String?
            ),
            (#"{"CIO":{"push":{"link":"app://welcome","image":"https://c/1.jpg"}}}"#, nil, "app://welcome"),
            (#"{"att":{"a":"https://o/1.png"},"custom":{"a":{"id":42,"deeplink":"app://o"}}}"#, "42", "app://o"),
            (#"{"payload":"{\"image_attachment\":\"https://z/1.png\",\"id\":\"call-9\"}"}"#, "call-9", nil),
            (#"{"adb_media":"https://a/1.jpg","id":"sale-1","uri":"app://sale"}"#, "sale-1", "app://sale"),
            (#"{"adb_media":"https://a/1.jpg"}"#, nil, nil),
        ])
    func found(text: String, id: String?, url: String?) throws {
        let found = try route(text)
        #expect(found?.id == id)
        #expect(found?.url == url)
    }

    @Test(
        "each vendor's own deep-link key wins over the generic keys, and the route says where it came from",
        arguments: [
            ("route-airship.json", "airship", "^d", "app://episodes/12"),
            ("route-braze.json", "braze", "ab_uri", "app://cart"),
            ("route-adobe.json", "adb_media", "adb_uri", "app://sale/3"),
            ("route-clevertap.json", "clevertap", "wzrk_dl", "app://product/77"),
            ("route-onesignal.json", "onesignal", "os_data.u", "https://shop.example/orders/5"),
            ("route-onesignal-custom.json", "onesignal", "custom.u", "https://shop.example/orders/6"),
            ("route-iterable.json", "iterable", "itbl.defaultAction.data", "https://news.example/a/1"),
            ("moengage.json", "moengage", "app_extra.moe_deeplink", "app://season/new"),
            ("salesforce.json", "salesforce", "_od", "https://shop.example/collection"),
            ("klaviyo.json", "klaviyo", "url", "app://klaviyo/product/9"),
            ("swrve.json", "swrve", "_sd", "app://swrve/world/2"),
            ("adobe-campaign.json", "adobe_campaign", "uri", "app://campaign/offer/42"),
            ("emarsys.json", "emarsys", "ems.default_action.url", "https://shop.example/wishlist"),
            ("bloomreach.json", "bloomreach", "url", "app://bloomreach/cart"),
            ("expo.json", "expo", "body.url", "app://photos/123"),
            ("appcues.json", "appcues", "appcues_deep_link_url", "app://appcues/setup"),
            ("mindbox.json", "mindbox", "clickUrl", "https://shop.example/orders/41"),
            ("kumulos.json", "kumulos", "custom.u", "https://club.example/match/17"),
        ])
    func vendorKeys(fixture: String, convention: String, key: String, url: String) throws {
        let text = try String(contentsOfFile: FixtureDirectory.payloads + "/" + fixture, encoding: .utf8)
        let found = try #require(try route(text))
        #expect(found.url == url)
        #expect(found.urlSource == DeepLinkRoute.Source(convention: convention, key: key))
    }

    @Test("ids keep their own source: OneSignal's custom data, else the root beside os_data")
    func idSources() throws {
        let custom = try #require(
            try route(
                String(contentsOfFile: FixtureDirectory.payloads + "/route-onesignal-custom.json", encoding: .utf8)))
        #expect(custom.id == "order-6")
        #expect(custom.idSource == DeepLinkRoute.Source(convention: "onesignal", key: "custom.a.id"))
        let osData = try #require(
            try route(String(contentsOfFile: FixtureDirectory.payloads + "/route-onesignal.json", encoding: .utf8)))
        #expect(osData.id == "order-5")
        #expect(osData.idSource == DeepLinkRoute.Source(convention: nil, key: "id"))
    }

    @Test(
        "a vendor's key counts only for a matched convention, and Iterable's only for an openUrl action",
        arguments: [
            (#"{"^d":"app://airship","deeplink":"app://generic"}"#, "app://generic"),
            (
                #"{"itbl":{"attachment-url":"https://i/1.png","defaultAction":{"type":"buyNow","data":"sku-1"}},"#
                    + #""url":"app://generic"}"#,
                "app://generic"
            ),
            (#"{"adb_media":"https://a/1.jpg","adb_uri":7,"uri":"app://generic"}"#, "app://generic"),
            (
                #"{"ems":{"default_action":{"type":"MEAppEvent","url":"app://event"}},"image_url":"https://e/1.png","#
                    + #""link":"app://generic"}"#,
                "app://generic"
            ),
            (
                #"{"source":"xnpe_platform","action":"app","url":"app://opened","image":"https://b/1.jpg"}"#,
                "app://opened"
            ),
        ])
    func vendorKeysNotTaken(text: String, url: String) throws {
        let found = try route(text)
        #expect(found?.url == url)
        #expect(found?.urlSource?.convention == nil)
    }

    @Test("a convention's custom data wins over the root, and keys are configurable")
    func precedenceAndKeys() throws {
        let text = #"{"CIO":{"push":{"link":"app://inner","image":"https://c/1.jpg"}},"link":"app://root","ref":"r-1"}"#
        #expect(try route(text)?.url == "app://inner")
        var keys = DeepLinkRoute.Keys()
        keys.id = ["ref"]
        keys.url = ["nope"]
        let custom = try route(text, keys: keys)
        #expect(custom?.id == "r-1")
        #expect(custom?.url == nil)
    }
}
