import RichPushCore

/// What tells a vendor's SDK that a payload is its own: a key that must be there, or a key whose string must equal
/// a value (Klaviyo's `body._k`; Bloomreach's `source` = `xnpe_platform`). A convention that reads a generic key
/// (`image`, `imageUrl`, `rich-media`) reads it only when its vendor's marker is there, as that SDK does, so that
/// another sender's payload is not taken for the vendor's.
public struct VendorMarker: Sendable, Hashable {
    /// The keys from the payload's root (`@json` parses a JSON-encoded string on the way).
    public var path: [String]
    /// The text the string at `path` must equal; nil when any value there will do.
    public var equals: String?

    /// A marker: the value at `path`, equal to `equals` when one is given.
    public init(_ path: [String], equals: String? = nil) {
        self.path = path
        self.equals = equals
    }

    /// Whether `payload` carries the marker. A step of the path that is not an object is not a problem here: the
    /// payload is simply not the vendor's.
    public func isPresent(in payload: PushPayload) -> Bool {
        var ignored = ConventionScan()
        guard let value = walk(payload, path, into: &ignored) else { return false }
        guard let equals else { return true }
        return value.stringValue == equals
    }
}
