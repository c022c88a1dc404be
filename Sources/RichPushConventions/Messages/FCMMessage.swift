import RichPushCore

/// The media of a Firebase Cloud Messaging HTTP v1 message, per platform, and the message's mutations.
///
/// - iOS: `apns.fcm_options.image`, else `notification.image` (what FCM puts in the APNs payload as
///   `fcm_options.image` for its iOS SDK's service extension), then every convention RichPush reads inside
///   `apns.payload`, the APNs payload FCM delivers (its fields named `apns.payload.…`).
/// - Android: `android.notification.image`, else `notification.image` (what FCM's Android code downloads).
///
/// Fields are named from the input's root: `message.apns.fcm_options.image` when the message came wrapped.
package struct FCMMessage: Sendable {
    /// The name of the convention of the message's own fields, written as `convention` on their attachments.
    package static let convention = "fcm_v1"

    /// `message.` for a wrapped message, else empty: what every field's name starts with.
    package let prefix: String
    /// The message (inside its wrapper, if any).
    package private(set) var message: JSONObject
    private let wrapped: Bool

    /// The message of `payload`, when `format` says it is one.
    package init?(_ payload: PushPayload, format: PayloadFormat) {
        guard format.name == .fcmV1 else { return nil }
        wrapped = format.wrapped
        prefix = format.wrapped ? "message." : ""
        if format.wrapped {
            guard case .object(let message)? = payload.root["message"] else { return nil }
            self.message = message
        } else {
            message = payload.root
        }
    }

    /// The APNs payload FCM delivers to iOS (`apns.payload`), when there is one and it is an object.
    package var apnsPayload: PushPayload? {
        guard case .object(let apns)? = message["apns"], case .object(let payload)? = apns["payload"] else {
            return nil
        }
        return PushPayload(payload)
    }

    /// Every reference of the message, each URL once per platform (iOS first, then Android), and the problems of
    /// the fields read; `registry` is applied to `apns.payload`.
    package func scan(with registry: ConventionRegistry) -> ConventionScan {
        let own = ownScans()
        var scan = own.ios
        for (_, found) in conventionScans(with: registry) {
            scan.takeProblems(of: found)
            scan.overrides += found.overrides
            scan.merge(found.references)
        }
        // Through `merge`, as apns.payload's were: its identifier unique among theirs, its URL kept though iOS has
        // it too (one reference per platform).
        scan.takeProblems(of: own.android)
        scan.merge(own.android.references)
        return scan
    }

    /// What the message's own fields hold (the `fcm_v1` convention): the iOS reference and the Android one, each
    /// with the problems of its fields.
    package func ownScans() -> (ios: ConventionScan, android: ConventionScan) {
        var ios = ConventionScan()
        let iosField =
            value(at: ["apns", "fcm_options", "image"], into: &ios, platform: .ios)
            ?? value(at: ["notification", "image"], into: &ios, platform: .ios)
        if let (value, field) = iosField {
            ios.take(value, field: field, convention: Self.convention, identifier: "fcm_image", platform: .ios)
        }
        var android = ConventionScan()
        let androidField =
            value(at: ["android", "notification", "image"], into: &android, platform: .android)
            ?? value(at: ["notification", "image"], into: &android, platform: .android)
        if let (value, field) = androidField {
            android.take(
                value, field: field, convention: Self.convention, identifier: "android_image", platform: .android)
        }
        return (ios, android)
    }

    /// Each convention of `registry` applied to `apns.payload` (none without one), its fields and problems named
    /// from the input's root (`message.apns.payload.adb_media`).
    package func conventionScans(with registry: ConventionRegistry) -> [(name: String, scan: ConventionScan)] {
        guard let inner = apnsPayload else { return [] }
        let within = prefix + "apns.payload."
        return registry.scans(inner).map { name, scan in
            var found = scan
            found.nameFields(within: within)
            return (name, found)
        }
    }

    /// The value at `path` in the message and its field's name; nil when a key is absent. A step that must be an
    /// object and is not is a `bad-reference` problem (the conventions' own walk, strictly: FCM's schema),
    /// named from the input's root and for `platform` (nil then).
    private func value(
        at path: [String], into scan: inout ConventionScan, platform: DevicePlatform
    ) -> (PushPayload.JSON, String)? {
        // FCM reads its messages as proto3 JSON, where null is a field not set: the next field is read then, as for
        // an absent one, at the end of the path or on the way to it (`"android": null`).
        var unused = ConventionScan()
        for end in 1...path.count where walk(PushPayload(message), Array(path[..<end]), into: &unused) == .null {
            return nil
        }
        var walked = ConventionScan()
        let value = walk(PushPayload(message), path, into: &walked, strictly: true)
        for var problem in walked.problems {
            problem.source = prefix + problem.source
            problem.platform = platform
            scan.problems.append(problem)
        }
        return value.map { ($0, prefix + path.joined(separator: ".")) }
    }

    // MARK: - Mutations

    /// Applies `change` to the APNs payload FCM delivers (`apns.payload`), when the message has one.
    package mutating func updateAPNSPayload(_ change: (inout PushPayload) -> Void) {
        guard var payload = apnsPayload, case .object(var apns)? = message["apns"] else { return }
        change(&payload)
        apns.set("payload", .object(payload.root))
        message.set("apns", .object(apns))
    }

    /// Sets the string at `path` (objects made where missing or null, which proto3 JSON reads as not set; a step
    /// that is another value is left alone, and then nothing is set).
    package mutating func set(_ text: String, at path: [String]) {
        func set(_ object: inout JSONObject, _ path: ArraySlice<String>) -> Bool {
            let key = path.first!
            if path.count == 1 {
                object.set(key, .text(text))
                return true
            }
            var next: JSONObject
            switch object[key] {
            case nil, .null?: next = JSONObject()
            case .object(let existing)?: next = existing
            default: return false
            }
            guard set(&next, path.dropFirst()) else { return false }
            object.set(key, .object(next))
            return true
        }
        _ = set(&message, path[...])
    }

    /// The input with this message in it (in its wrapper, when it came in one).
    package func written(into payload: PushPayload) -> PushPayload {
        var payload = payload
        if wrapped {
            payload.root.set("message", .object(message))
        } else {
            payload.root = message
        }
        return payload
    }
}
