import RichPushCore

/// ZEGOCLOUD ZPNs: a top-level `"payload"`, usually a JSON *string* and sometimes an object, holding
/// `"image_attachment": "<url>"`.
///
/// A `payload` string that is not JSON (apps put free text there too) carries no media and is not a problem.
public struct ZegoConvention: MediaConvention {
    public var name: String { "zego" }

    /// Where the app's custom data lives, searched for a route.
    public var customData: [[String]] { Self.customDataPaths }
    private static let customDataPaths: [[String]] = [["payload", "@json"]]

    /// `payload`: nothing else is read.
    public var rootKeys: [String]? { ["payload"] }

    /// Bounds for parsing the embedded JSON string; the same as a whole payload's by default.
    public var limits: JSONParser.Limits

    /// The convention.
    public init(limits: JSONParser.Limits = .init()) {
        self.limits = limits
    }

    public func scan(_ payload: PushPayload) -> ConventionScan {
        var scan = ConventionScan()
        let inner: JSONObject
        switch payload.root["payload"] {
        case .object(let object)?:
            inner = object
        case .string(let string)?:
            guard case .object(let object)? = try? JSONParser(limits: limits).parse(Array(string.value.utf8)) else {
                return scan
            }
            inner = object
        default:
            return scan
        }
        scan.take(
            inner["image_attachment"], field: "payload.image_attachment", convention: name,
            identifier: "image_attachment")
        return scan
    }
}
