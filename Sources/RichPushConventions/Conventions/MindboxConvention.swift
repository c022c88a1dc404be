import RichPushCore

/// Mindbox: a top-level `imageUrl`, read only with `uniqueKey` beside it, as Mindbox's payloads carry it; in the
/// older format, `aps.imageUrl` when `aps` holds `uniqueKey` (MindboxNotificationService's parse and getUserInfo,
/// SharedInternalMethods.swift in mindbox-cloud/ios-sdk, which reads the fields inside `aps` when `aps.uniqueKey`
/// is there and at the root otherwise). Mindbox percent-encodes the URL before fetching it; RichPush fetches it as
/// sent (a URL with spaces is `bad-url`). Its deep link is `clickUrl`, or `aps.clickUrl` in the older format.
public struct MindboxConvention: MediaConvention {
    public var name: String { "mindbox" }

    public var routeKeys: [RouteKey] { Self.routes }
    private static let routes: [RouteKey] = [RouteKey(.url, ["clickUrl"]), RouteKey(.url, ["aps", "clickUrl"])]

    /// The markers' `aps` (the older format) and `uniqueKey`: without one of them nothing is read.
    public var rootKeys: [String]? { ["aps", "uniqueKey"] }

    /// Mindbox's marker: `uniqueKey`.
    public static let marker = VendorMarker(["uniqueKey"])

    /// The convention.
    public init() {}

    public func scan(_ payload: PushPayload) -> ConventionScan {
        var scan = ConventionScan()
        // The older format's marker, `aps.uniqueKey`, read in place: every APNs payload has `aps`, so every payload
        // of every sender reaches this (through a VendorMarker's walk, 0.4% of the campaign's CPU).
        if case .object(let aps)? = payload.root["aps"], aps["uniqueKey"] != nil {
            scan.take(aps["imageUrl"], field: "aps.imageUrl", convention: name, identifier: "imageUrl")
        } else if Self.marker.isPresent(in: payload) {
            scan.take(payload.root["imageUrl"], field: "imageUrl", convention: name, identifier: "imageUrl")
        }
        return scan
    }
}
