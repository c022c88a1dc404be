import RichPushCore

/// Adobe Journey Optimizer (and Adobe Experience Platform Messaging): a top-level `"adb_media": "<url>"`.
public struct AdobeMediaConvention: MediaConvention {
    public var name: String { "adb_media" }

    /// `adb_uri`: the deep link Adobe's Messaging extension opens.
    public var routeKeys: [RouteKey] { Self.routes }
    private static let routes: [RouteKey] = [RouteKey(.url, ["adb_uri"])]

    /// `adb_media`: nothing else is read.
    public var rootKeys: [String]? { ["adb_media"] }

    /// The convention.
    public init() {}

    public func scan(_ payload: PushPayload) -> ConventionScan {
        var scan = ConventionScan()
        scan.take(payload.root["adb_media"], field: "adb_media", convention: name, identifier: "adb_media")
        return scan
    }
}
