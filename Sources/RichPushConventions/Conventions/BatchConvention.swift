import RichPushCore

/// Batch: `com.batch` → `at` → `u` (the URL) and `t` (the declared type, a UTI), as Batch's
/// RichNotificationHelper reads them. The type becomes the attachment's `type_hint`; the identifier is Batch's
/// own, `batch_rich_attachment`.
public struct BatchConvention: MediaConvention {
    public var name: String { "batch" }
    /// Where Batch keeps its data (`l`, the deep link, among it), searched for a route.
    public var customData: [[String]] { Self.customDataPaths }
    private static let customDataPaths: [[String]] = [["com.batch"]]
    /// `com.batch`: nothing else is read.
    public var rootKeys: [String]? { ["com.batch"] }
    public init() {}
    public func scan(_ payload: PushPayload) -> ConventionScan {
        var scan = ConventionScan()
        guard let attachment = walk(payload, ["com.batch", "at"], into: &scan) else { return scan }
        guard let object = scan.object(attachment, field: "com.batch.at", expected: "{u, t}") else { return scan }
        let hint = scan.string(object["t"], field: "com.batch.at.t")
        scan.take(
            object["u"], field: "com.batch.at.u", convention: name, identifier: "batch_rich_attachment", typeHint: hint)
        return scan
    }
}
