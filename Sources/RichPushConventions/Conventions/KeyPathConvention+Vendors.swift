/// Round three (issue 24): vendors whose extension reads one URL at a fixed key path, each checked against the
/// vendor's own source, as the instances in KeyPathConvention.swift are. Where the SDK names the attachment with an
/// empty or random identifier, the identifier is the key that holds the URL.
extension KeyPathConvention {
    /// MoEngage: `moengage` → `media-attachment`, with `moengage.media-type` (`image`, `video`, `audio`) as the
    /// `type_hint` (MoEngage's MORichNotification: MOMedia's URL and media type, MO_MEDIA_ATTACHMENT in
    /// MOInboxExposedConstants.h; the framework ships as a binary, so its headers and payloads are what was
    /// checked). Its deep link is `app_extra.moe_deeplink`.
    public static let moEngage: KeyPathConvention = {
        var convention = KeyPathConvention(
            name: "moengage", path: ["moengage", "media-attachment"], hintPath: ["moengage", "media-type"],
            identifier: "media-attachment")
        convention.routeKeys = [RouteKey(.url, ["app_extra", "moe_deeplink"])]
        return convention
    }()

    /// Salesforce Marketing Cloud MobilePush: a top-level `_mediaUrl` (the service extension of MobilePush's "Rich
    /// Notifications" guide, salesforce-marketingcloud/MarketingCloudSDK-iOS, _posts/2017-10-04-rich-notifications.md).
    /// The guide's extension sets the content's body to `_mediaAlt` when the media fails (download or attachment);
    /// here it becomes the alert body when the media did not attach. Its deep link is `_od` (OpenDirect).
    public static let salesforce: KeyPathConvention = {
        var convention = KeyPathConvention(name: "salesforce", path: ["_mediaUrl"], identifier: "_mediaUrl")
        convention.missingMediaBodyPath = ["_mediaAlt"]
        convention.routeKeys = [RouteKey(.url, ["_od"])]
        return convention
    }()

    /// Klaviyo: a top-level `rich-media`, read only when `body._k` is there (KlaviyoExtensionSDK in
    /// klaviyo-swift-sdk's KlaviyoSwiftExtension/KlaviyoExtension.swift). `rich-media-type` names the file's
    /// extension there (`jpeg` when absent); here it is the `type_hint`, and the bytes decide (`type-mismatch` when
    /// they disagree). Its deep link is the top-level `url` (UNNotificationResponse+Klaviyo.swift).
    public static let klaviyo: KeyPathConvention = {
        var convention = KeyPathConvention(
            name: "klaviyo", path: ["rich-media"], hintPath: ["rich-media-type"], identifier: "rich-media")
        convention.marker = VendorMarker(["body", "_k"])
        convention.routeKeys = [RouteKey(.url, ["url"])]
        return convention
    }()

    /// Swrve: `_sw` → `media` → `url` (SwrveNotificationManager.m in swrve-ios-sdk's SwrveSDKCommon; its keys in
    /// SwrvePushConstants.m). The same object holds `fallback_url` and `fallback_sd` (fetched when the primary
    /// fails, for any reason, within the same deadline; the fallback's deep link, which becomes the route when the
    /// fallback attached) and `title`, `subtitle`, `body`, which replace the alert text only when the media (either)
    /// attached (`mediaTextFromProvidedContent`). Its deep link is `_sd`, else the older `_d`.
    public static let swrve: KeyPathConvention = {
        var convention = KeyPathConvention(name: "swrve", path: ["_sw", "media", "url"], identifier: "swrve_media")
        convention.mediaTextPath = ["_sw", "media"]
        convention.fallbackPaths = (["_sw", "media", "fallback_url"], ["_sw", "media", "fallback_sd"])
        convention.routeKeys = [RouteKey(.url, ["_sd"]), RouteKey(.url, ["_d"])]
        return convention
    }()

    /// Adobe Campaign Standard: a top-level `media-attachment-url` (Adobe's "Understanding push notifications
    /// payload structure" for Campaign Standard, whose iOS sample payload carries it and `uri`); Journey Optimizer's
    /// `adb_media` is the `adb_media` convention. Its deep link is `uri`.
    public static let adobeCampaign: KeyPathConvention = {
        var convention = KeyPathConvention(
            name: "adobe_campaign", path: ["media-attachment-url"], identifier: "media-attachment-url")
        convention.routeKeys = [RouteKey(.url, ["uri"])]
        return convention
    }()

    /// SAP Emarsys: a top-level `image_url`, read only when `ems` is there (EMSNotificationService+Attachment.m in
    /// emartech/ios-emarsys-sdk; the SDK's extension reads `ems` for its actions and in-app message). Its deep link
    /// is `ems.default_action.url` when the action's `type` is `OpenExternalUrl` (EMSPushV3Internal.m).
    public static let emarsys: KeyPathConvention = {
        var convention = KeyPathConvention(name: "emarsys", path: ["image_url"], identifier: "image_url")
        convention.marker = VendorMarker(["ems"])
        convention.routeKeys = [
            RouteKey(
                .url, ["ems", "default_action", "url"], when: (["ems", "default_action", "type"], "OpenExternalUrl"))
        ]
        return convention
    }()

    /// Bloomreach (Exponea): a top-level `image`, read only when `source` is `xnpe_platform`
    /// (ExponeaNotificationService.swift in exponea/exponea-ios-sdk; Exponea.isExponeaNotification). Bloomreach
    /// saves every image as `image.png`, its identifier too; RichPush keeps the identifier and names the file by the
    /// bytes. Its deep link is `url` when `action` is `deeplink` or `browser` (PushNotificationParser.swift).
    public static let bloomreach: KeyPathConvention = {
        var convention = KeyPathConvention(name: "bloomreach", path: ["image"], identifier: "image.png")
        convention.marker = VendorMarker(["source"], equals: "xnpe_platform")
        convention.routeKeys = [
            RouteKey(.url, ["url"], when: (["action"], "deeplink")),
            RouteKey(.url, ["url"], when: (["action"], "browser")),
        ]
        return convention
    }()

    /// Expo: `body` → `_richContent` → `image`: Expo's push service puts a message's `richContent` into its `data`,
    /// which reaches iOS as `body` (expo/expo's test suite checks `_richContent` there). Expo ships no service
    /// extension of its own; the app's reads this. The message's `data` (`body`) is searched for a route.
    public static let expo: KeyPathConvention = {
        var convention = KeyPathConvention(
            name: "expo", path: ["body", "_richContent", "image"], identifier: "expo_richContent")
        convention.customData = [["body"]]
        return convention
    }()

    /// Appcues: a top-level `appcues_attachment_url` (AppcuesNotificationServiceExtension.swift in
    /// appcues/appcues-ios-sdk, which names the file after the response's MIME type). Its deep link is
    /// `appcues_deep_link_url` (ParsedNotification.swift).
    public static let appcues: KeyPathConvention = {
        var convention = KeyPathConvention(
            name: "appcues", path: ["appcues_attachment_url"], identifier: "appcues_attachment_url")
        convention.routeKeys = [RouteKey(.url, ["appcues_deep_link_url"])]
        return convention
    }()
}
