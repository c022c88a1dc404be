import RichPushCore

/// The conventions RichPush applies to a payload, in order.
///
/// References are collected convention by convention in registry order, each convention's in its own
/// documented order; a URL found again (by another convention or field) is kept once, at its first place, and
/// what the later one said of its thumbnail (its role as the primary or a hidden one) fills what the first left
/// unsaid.
///
/// A convention that declares its `rootKeys` is called only for a payload whose root holds one of them: the
/// others' scans are empty by that declaration, and most payloads carry one vendor's keys of the 26. Measured on
/// issue 26's campaign (10,000 `adb_media` payloads, all but 20 cache hits): `scan` went from 10.3% to 4.3% of the
/// CPU (perf), and `stream`'s CPU to 0.93x (0.88-0.98, 11 pairs, load 6).
public struct ConventionRegistry: Sendable {
    /// The conventions, in the order they run.
    public private(set) var conventions: [any MediaConvention] {
        didSet {
            gate = Gate(conventions)
            names = conventions.map(\.name)
        }
    }

    /// Which conventions a payload's root keys let through, made once from their `rootKeys`.
    private var gate: Gate
    /// The conventions' names, in order, read once.
    private var names: [String]

    /// A registry with these conventions.
    public init(_ conventions: [any MediaConvention]) {
        self.conventions = conventions
        gate = Gate(conventions)
        names = conventions.map(\.name)
    }

    /// The built-in conventions, in this order: Adobe (`adb_media`), ZEGOCLOUD (`zego`), Firebase (`fcm`),
    /// Airship (`airship`), OneSignal (`onesignal`), CleverTap (`clevertap`), Iterable (`iterable`), Customer.io
    /// (`customerio`), Pushwoosh (`pushwoosh`), Batch (`batch`), AWS Amplify (`amplify`), Notifee (`notifee`),
    /// Home Assistant (`home_assistant`), Braze (`braze`); then round three's: MoEngage (`moengage`), Salesforce
    /// MobilePush (`salesforce`), Klaviyo (`klaviyo`), Swrve (`swrve`), Adobe Campaign Standard (`adobe_campaign`),
    /// SAP Emarsys (`emarsys`), Bloomreach (`bloomreach`), WebEngage (`webengage`), Expo (`expo`), Appcues
    /// (`appcues`), Mindbox (`mindbox`), Kumulos / Optimove (`kumulos`).
    public static var standard: ConventionRegistry { made }

    /// `standard`, made once: its gate hashes every convention's root keys, and each configuration starts from it
    /// (`serve --tenants` made one a tenant: 15% of loading a thousand).
    private static let made = ConventionRegistry([
        AdobeMediaConvention(), ZegoConvention(), KeyPathConvention.firebase, AirshipConvention(),
        OneSignalConvention(), CleverTapConvention(), KeyPathConvention.iterable, KeyPathConvention.customerIO,
        PushwooshConvention(), BatchConvention(), KeyPathConvention.amplify, NotifeeConvention(),
        HomeAssistantConvention(), KeyPathConvention.braze, KeyPathConvention.moEngage,
        KeyPathConvention.salesforce, KeyPathConvention.klaviyo, KeyPathConvention.swrve,
        KeyPathConvention.adobeCampaign, KeyPathConvention.emarsys, KeyPathConvention.bloomreach,
        WebEngageConvention(), KeyPathConvention.expo, KeyPathConvention.appcues, MindboxConvention(),
        KumulosConvention(),
    ])

    /// Adds a convention after the others. A convention with the same name replaces the old one in place.
    /// To add many, `register(contentsOf:)` does it in one step.
    public mutating func register(_ convention: any MediaConvention) {
        register(contentsOf: CollectionOfOne(convention))
    }

    /// Adds conventions after the others, in order; one with the name of a convention held (or of an earlier one
    /// added) replaces it in place. Linear in the conventions: adding 20,000 from a file one by one, each looked up
    /// by a scan and the registry's indexes rebuilt after each, took 7.7 s.
    public mutating func register(contentsOf added: some Sequence<any MediaConvention>) {
        var all = conventions
        var positions: [String: Int] = [:]
        for index in names.indices where positions[names[index]] == nil { positions[names[index]] = index }
        for convention in added {
            if let index = positions[convention.name] {
                all[index] = convention
            } else {
                positions[convention.name] = all.count
                all.append(convention)
            }
        }
        conventions = all
    }

    /// Every reference in `payload`, each URL once, and the problems the conventions found.
    public func scan(_ payload: PushPayload) -> ConventionScan {
        var result = ConventionScan()
        let selected = gate.selection(payload.root)
        // By index: iterating the array would copy each existential out of it (KeyPathConvention's is boxed).
        for index in conventions.indices where gate.includes(index, in: selected) {
            let scan = conventions[index].scan(payload)
            result.takeProblems(of: scan)
            if !scan.overrides.isEmpty { result.overrides += scan.overrides }
            result.merge(scan.references)
        }
        return result
    }

    /// The conventions, in order, that found one of `references` (by name). Only those are copied out of the array,
    /// and no convention is asked its name: the engine's filter over all 26 copied each (and each reference once per
    /// convention), 1.5% of the campaign's CPU.
    package func conventions(foundIn references: [MediaReference]) -> [any MediaConvention] {
        guard !references.isEmpty else { return [] }
        // By index, the names alone: iterating copies each reference whole.
        var found: [String] = []
        for index in references.indices where !found.contains(references[index].convention) {
            found.append(references[index].convention)
        }
        var matched: [any MediaConvention] = []
        for index in names.indices where found.contains(names[index]) { matched.append(conventions[index]) }
        return matched
    }

    /// Each convention's name and scan of `payload`, in order; one that the payload's root keys rule out is not
    /// called, and found nothing.
    package func scans(_ payload: PushPayload) -> [(name: String, scan: ConventionScan)] {
        let selected = gate.selection(payload.root)
        return conventions.indices.map { index in
            let convention = conventions[index]
            return (convention.name, gate.includes(index, in: selected) ? convention.scan(payload) : ConventionScan())
        }
    }

    /// The conventions a payload's root keys let through, as bits (bit `i` for convention `i`): one word per payload,
    /// so only the first 64 conventions are gated, and any after them always run.
    private struct Gate: Sendable {
        /// The conventions that declare no `rootKeys` and read every payload.
        let ungated: UInt64
        /// For each declared root key, the conventions that read it.
        let conventionsReading: [String: UInt64]

        init(_ conventions: [any MediaConvention]) {
            var ungated: UInt64 = 0
            var reading: [String: UInt64] = [:]
            for (index, convention) in conventions.prefix(64).enumerated() {
                guard let keys = convention.rootKeys else {
                    ungated |= 1 << index
                    continue
                }
                for key in keys { reading[key, default: 0] |= 1 << index }
            }
            self.ungated = ungated
            conventionsReading = reading
        }

        /// The conventions to call for a payload whose root is `root`. A key written with escapes is its decoded
        /// text here, as the conventions' lookups read it (and String's equality, which also takes canonically
        /// equivalent text as equal, can only let a convention through that finds nothing).
        func selection(_ root: JSONObject) -> UInt64 {
            var selected = ungated
            guard !conventionsReading.isEmpty else { return selected }
            root.forEachKey { key in selected |= conventionsReading[key] ?? 0 }
            return selected
        }

        /// Whether convention `index` is called, given `selection`.
        func includes(_ index: Int, in selection: UInt64) -> Bool {
            index >= 64 || selection & (1 << index) != 0
        }
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
        // The first convention's single reference (most payloads') is the list as it is: its array is shared.
        if references.isEmpty, added.count == 1 {
            references = added
            return
        }
        // A payload's references are few: comparing with each is cheaper than building the two indexes below (a
        // dictionary and a set made and freed for every payload were 1.5% of the campaign's CPU, the merge of its
        // one reference). Past a few, the indexes keep a hostile payload's thousands from taking quadratic time.
        guard references.count + added.count > 16 else {
            for reference in added { mergeOne(reference) }
            return
        }
        mergeIndexed(added)
    }

    /// `merge` through two indexes, the URLs' keys and the identifiers held: linear in the references, whatever
    /// their number or identifiers. Returns how many identifiers it tried (for the tests: about one a reference).
    @discardableResult
    package mutating func mergeIndexed(_ added: [MediaReference]) -> Int {
        var seen: [MediaReference.Key: Int] = [:]
        var identifiers = Set<String>()
        // For each identifier asked for again, the suffix to try next: without it, the n-th reference asking for
        // one identifier tried `-2` to `-n` first, and 75,000 of them (a 1 MB OneSignal `att` of one repeated key)
        // took three minutes, before any deadline was looked at.
        var nextSuffix: [String: Int] = [:]
        var tried = 0
        for (index, reference) in references.enumerated() {
            seen[reference.key] = seen[reference.key] ?? index
            identifiers.insert(reference.identifier)
        }
        for var reference in added {
            if let first = seen[reference.key] {
                references[first].absorb(reference)
                continue
            }
            seen[reference.key] = references.count
            var candidate = reference.identifier
            var suffix = nextSuffix[reference.identifier] ?? 2
            tried += 1
            while !identifiers.insert(candidate).inserted {
                candidate = "\(reference.identifier)-\(suffix)"
                suffix += 1
                tried += 1
            }
            if candidate != reference.identifier { nextSuffix[reference.identifier] = suffix }
            reference.identifier = candidate
            references.append(reference)
        }
        return tried
    }

    /// `merge` of one reference by comparing it with each held: the same rules without the indexes.
    private mutating func mergeOne(_ added: MediaReference) {
        if let first = references.firstIndex(where: {
            ExactString.same($0.url, added.url) && $0.platform == added.platform
        }) {
            references[first].absorb(added)
            return
        }
        var reference = added
        var suffix = 2
        while references.contains(where: { $0.identifier == reference.identifier }) {
            reference.identifier = "\(added.identifier)-\(suffix)"
            suffix += 1
        }
        references.append(reference)
    }
}

extension MediaReference {
    /// Takes in what `later`, a reference to the same URL for the same platform, adds: one attachment for both
    /// keeps the role the later gave it (Airship's thumbnail) and, when this one has none, its fallback (Swrve's
    /// `fallback_url`, fetched when the URL fails whichever convention named it first).
    mutating func absorb(_ later: MediaReference) {
        if let thumbnail = later.thumbnail {
            self.thumbnail = self.thumbnail?.filled(from: thumbnail) ?? thumbnail
        }
        if fallback == nil { fallback = later.fallback }
    }

    /// What makes two references one attachment: the same URL, byte for byte, for the same platform.
    package struct Key: Hashable {
        var url: ExactString
        var platform: DevicePlatform
    }

    package var key: Key { Key(url: ExactString(url), platform: platform) }
}
