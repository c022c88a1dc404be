import RichPushCore

/// Pushwoosh (and other SDKs that follow it): a top-level `attachment` string. An `attachment` object is Home
/// Assistant's convention, not this one, and is left to it.
public struct PushwooshConvention: MediaConvention {
    public var name: String { "pushwoosh" }
    /// `attachment`: nothing else is read.
    public var rootKeys: [String]? { ["attachment"] }
    public init() {}
    public func scan(_ payload: PushPayload) -> ConventionScan {
        var scan = ConventionScan()
        guard let value = payload.root["attachment"] else { return scan }
        if case .object = value { return scan }
        scan.take(value, field: "attachment", convention: name, identifier: "attachment")
        return scan
    }
}
