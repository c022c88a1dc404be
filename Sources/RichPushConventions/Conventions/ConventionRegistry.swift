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
    /// Home Assistant (`home_assistant`), Braze (`braze`); then round three's: MoEngage (`moengage`), Salesforce
    /// MobilePush (`salesforce`), Klaviyo (`klaviyo`), Swrve (`swrve`), Adobe Campaign Standard (`adobe_campaign`),
    /// SAP Emarsys (`emarsys`), Bloomreach (`bloomreach`), WebEngage (`webengage`), Expo (`expo`), Appcues
    /// (`appcues`), Mindbox (`mindbox`), Kumulos / Optimove (`kumulos`).
    public static var standard: ConventionRegistry {
        ConventionRegistry([
            AdobeMediaConvention(), ZegoConvention(), KeyPathConvention.firebase, AirshipConvention(),
            OneSignalConvention(), CleverTapConvention(), KeyPathConvention.iterable, KeyPathConvention.customerIO,
            PushwooshConvention(), BatchConvention(), KeyPathConvention.amplify, NotifeeConvention(),
            HomeAssistantConvention(), KeyPathConvention.braze, KeyPathConvention.moEngage,
            KeyPathConvention.salesforce, KeyPathConvention.klaviyo, KeyPathConvention.swrve,
            KeyPathConvention.adobeCampaign, KeyPathConvention.emarsys, KeyPathConvention.bloomreach,
            WebEngageConvention(), KeyPathConvention.expo, KeyPathConvention.appcues, MindboxConvention(),
            KumulosConvention(),
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
        for convention in conventions {
            let scan = convention.scan(payload)
            result.problems += scan.problems
            result.overrides += scan.overrides
            result.merge(scan.references)
        }
        return result
    }
}

extension ConventionScan {
    /// Adds `references` after the ones held, each URL once per platform: a URL found again (by another convention
    /// or field) keeps its first place, and what the later one said of its thumbnail (its role as the primary or a
    /// hidden one) fills what the first left unsaid. Identifiers are made unique within the payload, as
    /// UNNotificationAttachment's are.
    package mutating func merge(_ added: [MediaReference]) {
        // Most conventions find nothing in a payload: no index is built for them.
        guard !added.isEmpty else { return }
        var seen: [MediaReference.Key: Int] = [:]
        var identifiers = Set<String>()
        for (index, reference) in references.enumerated() {
            seen[reference.key] = seen[reference.key] ?? index
            identifiers.insert(reference.identifier)
        }
        for var reference in added {
            if let first = seen[reference.key] {
                // One attachment for both: it keeps the role the later reference gave it (Airship's thumbnail).
                if let later = reference.thumbnail {
                    let earlier = references[first].thumbnail
                    references[first].thumbnail = earlier?.filled(from: later) ?? later
                }
                continue
            }
            seen[reference.key] = references.count
            var candidate = reference.identifier
            var suffix = 2
            while !identifiers.insert(candidate).inserted {
                candidate = "\(reference.identifier)-\(suffix)"
                suffix += 1
            }
            reference.identifier = candidate
            references.append(reference)
        }
    }
}

extension MediaReference {
    /// What makes two references one attachment: the same URL for the same platform.
    package struct Key: Hashable {
        var url: String
        var platform: DevicePlatform
    }

    package var key: Key { Key(url: url, platform: platform) }
}
