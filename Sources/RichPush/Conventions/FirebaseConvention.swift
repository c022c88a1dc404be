/// Firebase Cloud Messaging: `fcm_options.image`, as FIRMessagingExtensionHelper reads it (it then names the
/// file after the server's suggested file name, which is how a JPEG ends up as `.php`).
public struct FirebaseConvention: MediaConvention {
    public var name: String { "fcm" }

    /// The convention.
    public init() {}

    public func scan(_ payload: Payload) -> ConventionScan {
        var scan = ConventionScan()
        guard let options = payload.root["fcm_options"] else { return scan }
        guard case .object(let object) = options else {
            scan.problems.append(
                Problem(source: "fcm_options", code: .badReference, detail: "fcm_options holds \(options.kindDescription); FCM sends an object"))
            return scan
        }
        scan.take(object["image"], field: "fcm_options.image", convention: name, identifier: "fcm_image")
        return scan
    }
}
