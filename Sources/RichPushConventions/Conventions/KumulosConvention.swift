import RichPushCore

/// Kumulos (Optimove Mobile): `attachments.pictureUrl`, read only when `custom.a` holds `k.message`, as
/// KumulosNotificationService (Kumulos/KumulosSdkSwift, Sources/Extension/KumulosNotificationService.swift) reads
/// it. A value that does not start with `https://` or `http://` is a path that Kumulos's extension completes on the
/// phone with its resizing service and the screen's width in points (`https://i.app.delivery/<width>x/<path>`):
/// RichPush cannot know the width, so it reports `on-device` and fetches nothing. Kumulos's deep link is `custom.u`;
/// its app data is `custom.a`.
public struct KumulosConvention: MediaConvention {
    public var name: String { "kumulos" }

    public var customData: [[String]] { Self.customDataPaths }
    private static let customDataPaths: [[String]] = [["custom", "a"]]

    public var routeKeys: [RouteKey] { Self.routes }
    private static let routes: [RouteKey] = [RouteKey(.url, ["custom", "u"])]

    /// Kumulos's own marker: `custom.a["k.message"]`.
    public static let marker = VendorMarker(["custom", "a", "k.message"])

    /// The marker's `custom`: without it nothing is read.
    public var rootKeys: [String]? { ["custom"] }

    /// The convention.
    public init() {}

    public func scan(_ payload: PushPayload) -> ConventionScan {
        var scan = ConventionScan()
        guard Self.marker.isPresent(in: payload),
            let value = scan.value(at: ["attachments", "pictureUrl"], in: payload)
        else { return scan }
        // The same test as Kumulos's, prefix by prefix: `HTTPS://` is a path to it too.
        if let text = value.stringValue, !text.isEmpty, !text.hasPrefix("https://"), !text.hasPrefix("http://") {
            scan.problems.append(
                EnrichmentProblem(
                    source: "attachments.pictureUrl", code: .onDevice,
                    detail:
                        "'\(text)' is a path Kumulos's extension completes with its resizing service and the phone's "
                        + "screen width; only the phone can fetch it"))
            return scan
        }
        scan.take(value, field: "attachments.pictureUrl", convention: name, identifier: "pictureUrl")
        return scan
    }
}
