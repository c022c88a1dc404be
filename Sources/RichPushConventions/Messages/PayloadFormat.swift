import RichPushCore

/// What an input is, decided by its shape: an APNs payload (what an iPhone's extension receives) or a Firebase
/// Cloud Messaging HTTP v1 message (what `projects/*/messages:send` takes, with or without its `{"message": ...}`
/// wrapper), and which member decided it.
public struct PayloadFormat: Sendable, Hashable {
    /// The two shapes RichPush reads.
    public enum Name: String, Sendable, Hashable, Codable, CaseIterable {
        /// An APNs payload: `aps` and the vendors' keys beside it.
        case apns
        /// An FCM HTTP v1 message: `apns`, `android`, `notification` and a target (`token`, `topic`, `condition`).
        case fcmV1 = "fcm-v1"
    }

    /// The shape.
    public var name: Name
    /// For an FCM message, whether it came inside `{"message": ...}` (its fields are named `message.…`).
    public var wrapped: Bool
    /// The member that decided (`aps`, `message.apns`, `android`), or why none did.
    public var decidedBy: String

    /// A format (`detect` decides one; tests and callers that build results make their own).
    public init(_ name: Name, wrapped: Bool = false, decidedBy: String) {
        self.name = name
        self.wrapped = wrapped
        self.decidedBy = decidedBy
    }

    /// The members of an FCM v1 `Message`, in the order they are tried as evidence.
    static let messageMembers = [
        "apns", "android", "notification", "token", "topic", "condition", "webpush", "data", "fcm_options", "name",
    ]

    /// The format of `payload`, by these rules in order:
    /// 1. `aps` at the root is an object: APNs (every APNs payload has it, silent ones too).
    /// 2. `message` at the root is an object holding a member of FCM's `Message`: an FCM message, wrapped.
    /// 3. `apns` or `android` at the root is an object, or `notification` is an object beside a `token`, `topic` or
    ///    `condition` string: an FCM message, unwrapped.
    /// 4. Anything else is read as APNs (its missing `aps` is reported as `not-mutable`).
    public static func detect(_ payload: PushPayload) -> PayloadFormat {
        let root = payload.root
        if case .object? = root["aps"] { return PayloadFormat(.apns, decidedBy: "aps") }
        if case .object(let message)? = root["message"],
            let member = messageMembers.first(where: { message[$0] != nil })
        {
            return PayloadFormat(.fcmV1, wrapped: true, decidedBy: "message.\(member)")
        }
        for member in ["apns", "android"] {
            if case .object? = root[member] { return PayloadFormat(.fcmV1, decidedBy: member) }
        }
        if case .object? = root["notification"],
            let target = ["token", "topic", "condition"].first(where: { root[$0]?.stringValue != nil })
        {
            return PayloadFormat(.fcmV1, decidedBy: "notification and \(target)")
        }
        return PayloadFormat(.apns, decidedBy: "no aps and no FCM v1 member: read as APNs")
    }

    /// The `format` object of the output: `name`, `decided_by`, and `wrapped` for an FCM message.
    package var json: PushPayload.JSON {
        var members: [(key: String, value: PushPayload.JSON)] = [
            ("name", .text(name.rawValue)), ("decided_by", .text(decidedBy)),
        ]
        if name == .fcmV1 { members.append(("wrapped", .bool(wrapped))) }
        return .object(JSONObject(members))
    }

    /// The format in a `format` object of the output, as `json` writes it.
    package init(json: PushPayload.JSON, path: String) throws {
        let fields = try JSONFields(json, path: path)
        let text = try fields.required(fields.string("name"), "name")
        guard let name = Name(rawValue: text) else {
            throw JSONFields.error("\(path).name", "'\(text)' is not a format (apns, fcm-v1)")
        }
        self.init(
            name, wrapped: try fields.bool("wrapped") ?? false,
            decidedBy: try fields.required(fields.string("decided_by"), "decided_by"))
    }
}
