/// The phone a media reference is for: where it is read from in the input, and what it is made into. An APNs
/// payload is for iOS alone; an FCM HTTP v1 message carries a reference per platform (`apns` and `android`, with
/// `notification.image` for both).
public enum DevicePlatform: String, Sendable, Hashable, Codable, CaseIterable {
    /// An iPhone's notification service extension: the attachment as `UNNotificationAttachment` takes it.
    case ios
    /// Firebase Cloud Messaging's Android code: a still JPEG or PNG of at most 1 MiB (see `AndroidVariant`).
    case android
}

extension DevicePlatform {
    /// The platform an output's `platform` member names; a decoding error for any other text.
    package init(outputName text: String) throws {
        guard let platform = DevicePlatform(rawValue: text) else {
            throw JSONFields.error("platform", "'\(text)' is not a platform (ios, android)")
        }
        self = platform
    }
}
