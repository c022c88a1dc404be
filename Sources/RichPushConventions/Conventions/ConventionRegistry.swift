import RichPushCore

/// The conventions RichPush applies to a payload, in order.
///
/// References are collected convention by convention in registry order, each convention's in its own
/// documented order; a URL found again (by another convention or field) is kept once, at its first place, and
/// what the later one said of its thumbnail (its role as the primary or a hidden one) fills what the first left
/// unsaid.
public struct ConventionRegistry: Sendable {
    /// The conventions, in the order they run.
    public private(set) var conventions: [any MediaConvention]

    /// A registry with these conventions.
    public init(_ conventions: [any MediaConvention]) {
        self.conventions = conventions
    }

    /// The built-in conventions, in this order: Adobe (`adb_media`), ZEGOCLOUD (`zego`), Firebase (`fcm`),
    /// Airship (`airship`), OneSignal (`onesignal`), CleverTap (`clevertap`), Iterable (`iterable`), Customer.io
    /// (`customerio`), Pushwoosh (`pushwoosh`), Batch (`batch`), AWS Amplify (`amplify`), Notifee (`notifee`),
    /// Home Assistant (`home_assistant`), Braze (`braze`).
    public static var standard: ConventionRegistry {
        ConventionRegistry([
            AdobeMediaConvention(), ZegoConvention(), KeyPathConvention.firebase, AirshipConvention(),
            OneSignalConvention(), CleverTapConvention(), KeyPathConvention.iterable, KeyPathConvention.customerIO,
            PushwooshConvention(), BatchConvention(), KeyPathConvention.amplify, NotifeeConvention(),
            HomeAssistantConvention(), KeyPathConvention.braze,
        ])
    }

    /// Adds a convention after the others. A convention with the same name replaces the old one in place.
    public mutating func register(_ convention: any MediaConvention) {
        if let index = conventions.firstIndex(where: { $0.name == convention.name }) {
            conventions[index] = convention
        } else {
            conventions.append(convention)
        }
    }

    /// Every reference in `payload`, each URL once, and the problems the conventions found.
    public func scan(_ payload: PushPayload) -> ConventionScan {
        var result = ConventionScan()
        var seen: [String: Int] = [:]
        var identifiers = Set<String>()
        for convention in conventions {
            let scan = convention.scan(payload)
            result.problems += scan.problems
            result.overrides += scan.overrides
            for var reference in scan.references {
                if let first = seen[reference.url] {
                    // One attachment for both: it keeps the role the later reference gave it (Airship's thumbnail).
                    if let later = reference.thumbnail {
                        let earlier = result.references[first].thumbnail
                        result.references[first].thumbnail = earlier?.filled(from: later) ?? later
                    }
                    continue
                }
                seen[reference.url] = result.references.count
                // Identifiers must be unique within a payload, as UNNotificationAttachment's are.
                var candidate = reference.identifier
                var suffix = 2
                while !identifiers.insert(candidate).inserted {
                    candidate = "\(reference.identifier)-\(suffix)"
                    suffix += 1
                }
                reference.identifier = candidate
                result.references.append(reference)
            }
        }
        return result
    }
}
