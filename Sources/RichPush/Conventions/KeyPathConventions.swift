/// Conventions that read one URL (and perhaps a declared type) at a fixed key path, each checked against the
/// vendor's own extension source.

/// Walks `path` from the payload's root through objects; returns the value and the dotted field name, or a
/// `bad-reference` problem when a step that must be an object is not one. Nil when a key is absent.
private func walk(_ payload: Payload, _ path: [String], into scan: inout ConventionScan) -> JSONValue? {
    var current: JSONValue = .object(payload.root)
    for (index, key) in path.enumerated() {
        guard case .object(let object) = current else {
            let field = path[..<index].joined(separator: ".")
            scan.problems.append(
                Problem(source: field, code: .badReference, detail: "\(field) holds \(current.kindDescription); expected an object"))
            return nil
        }
        guard let next = object[key] else { return nil }
        current = next
    }
    return current
}

/// Iterable: `itbl` → `attachment-url` (ITBNotificationServiceExtension; JsonKey.Payload.metadata and
/// attachmentUrl in Iterable's swift-sdk).
public struct IterableConvention: MediaConvention {
    public var name: String { "iterable" }
    public init() {}
    public func scan(_ payload: Payload) -> ConventionScan {
        var scan = ConventionScan()
        let value = walk(payload, ["itbl", "attachment-url"], into: &scan)
        scan.take(value, field: "itbl.attachment-url", convention: name, identifier: "itbl_attachment")
        return scan
    }
}

/// Customer.io: `CIO` → `push` → `image` (the rich push payload Customer.io's iOS SDK reads).
public struct CustomerIOConvention: MediaConvention {
    public var name: String { "customerio" }
    public init() {}
    public func scan(_ payload: Payload) -> ConventionScan {
        var scan = ConventionScan()
        let value = walk(payload, ["CIO", "push", "image"], into: &scan)
        scan.take(value, field: "CIO.push.image", convention: name, identifier: "cio_image")
        return scan
    }
}

/// Pushwoosh (and other SDKs that follow it): a top-level `attachment` string. An `attachment` object is Home
/// Assistant's convention, not this one, and is left to it.
public struct PushwooshConvention: MediaConvention {
    public var name: String { "pushwoosh" }
    public init() {}
    public func scan(_ payload: Payload) -> ConventionScan {
        var scan = ConventionScan()
        guard let value = payload.root["attachment"] else { return scan }
        if case .object = value { return scan }
        scan.take(value, field: "attachment", convention: name, identifier: "attachment")
        return scan
    }
}

/// Batch: `com.batch` → `at` → `u` (the URL) and `t` (the declared type, a UTI), as Batch's
/// RichNotificationHelper reads them. The type becomes the attachment's `type_hint`.
public struct BatchConvention: MediaConvention {
    public var name: String { "batch" }
    public init() {}
    public func scan(_ payload: Payload) -> ConventionScan {
        var scan = ConventionScan()
        guard let attachment = walk(payload, ["com.batch", "at"], into: &scan) else { return scan }
        guard case .object(let object) = attachment else {
            scan.problems.append(
                Problem(source: "com.batch.at", code: .badReference, detail: "com.batch.at holds \(attachment.kindDescription); expected {u, t}"))
            return scan
        }
        var hint: String?
        if let declared = object["t"] {
            if let text = declared.stringValue {
                hint = text
            } else {
                scan.problems.append(
                    Problem(source: "com.batch.at.t", code: .badOption, detail: "com.batch.at.t holds \(declared.kindDescription); expected a string"))
            }
        }
        scan.take(object["u"], field: "com.batch.at.u", convention: name, identifier: "batch_attachment", typeHint: hint)
        return scan
    }
}

/// AWS Amplify / Pinpoint: `data` → `media-url` (PinpointNotificationPayload in Amplify's notification
/// utilities: `data` decoded with `mediaURL` under the key `media-url`).
public struct AmplifyConvention: MediaConvention {
    public var name: String { "amplify" }
    public init() {}
    public func scan(_ payload: Payload) -> ConventionScan {
        var scan = ConventionScan()
        let value = walk(payload, ["data", "media-url"], into: &scan)
        scan.take(value, field: "data.media-url", convention: name, identifier: "media-url")
        return scan
    }
}
