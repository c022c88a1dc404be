/// A JSON value that keeps what the text said: object members in their order (duplicates included), numbers as
/// their literal text, and strings, keys included, with the escapes they were written with.
///
/// `JSONValue` is what lets RichPush hand back a payload that equals its input except where it was mutated:
/// `"mutable-content": 1` stays `1`, `1.0` stays `1.0`, and a 30-digit integer stays 30 digits.
public enum JSONValue: Sendable, Hashable {
    /// An object, its members in source order.
    case object(JSONObject)
    /// An array.
    case array([JSONValue])
    /// A string.
    case string(JSONString)
    /// A number, as its literal text (validated against JSON's number grammar when parsed).
    case number(String)
    /// `true` or `false`.
    case bool(Bool)
    /// `null`.
    case null

    /// A string value made in code (no source literal).
    public static func text(_ value: String) -> JSONValue { .string(JSONString(value)) }

    /// A number value from an integer.
    public static func integer<T: BinaryInteger>(_ value: T) -> JSONValue { .number(String(value)) }

    /// The object, when this is one.
    public var objectValue: JSONObject? {
        if case .object(let object) = self { return object }
        return nil
    }

    /// The decoded string, when this is one.
    public var stringValue: String? {
        if case .string(let string) = self { return string.value }
        return nil
    }

    /// A short name of the value's JSON type, for error messages ("a number", "an object").
    public var kindDescription: String {
        switch self {
        case .object: return "an object"
        case .array: return "an array"
        case .string: return "a string"
        case .number: return "a number"
        case .bool: return "a boolean"
        case .null: return "null"
        }
    }
}

/// A JSON string (a value or an object's key): its decoded value, and the exact text between the quotes when
/// it was parsed with escapes.
///
/// Writing a parsed string reproduces its literal, so `"\u00e9"` and lone surrogates such as `"\ud800"` (which
/// a Swift `String` cannot hold: its `value` has U+FFFD there) survive a round trip as written.
public struct JSONString: Sendable, Hashable {
    /// The decoded text.
    public let value: String
    /// The source text between the quotes, kept only when it differs from `value` (it had escapes).
    public let literal: String?

    /// A string made in code; it is written with the minimal escapes.
    public init(_ value: String) {
        self.value = value
        self.literal = nil
    }

    init(value: String, literal: String?) {
        self.value = value
        self.literal = literal
    }

    /// Whether the decoded text is `name`, scalar by scalar (see `JSONObject` for why not `==`).
    func means(_ name: String) -> Bool {
        value.unicodeScalars.elementsEqual(name.unicodeScalars)
    }
}

/// A JSON object's members in source order. All members, duplicates included, are kept and written back, each
/// key as it was written (a key is a `JSONString`, as a string value is).
///
/// Lookups compare a key's decoded text with the name asked for, Unicode scalar by scalar: `"adb\u005fmedia"`
/// is found as `adb_media`, as the iPhone's `userInfo` (an `NSDictionary` whose keys compare code unit by code
/// unit) finds it; `"e\u0301"` is not `"\u00e9"`. The last member that matches wins, as JavaScript's `JSON.parse`
/// keeps the last.
public struct JSONObject: Sendable, Hashable {
    /// One member: its key as written, and its value.
    public typealias Member = (key: JSONString, value: JSONValue)

    /// The members, in order.
    public var members: [Member]

    /// An object with these members, in this order; each key is written with the minimal escapes.
    public init(_ members: [(key: String, value: JSONValue)] = []) {
        self.members = members.map { (JSONString($0.key), $0.value) }
    }

    /// An object with these members, keys as they are (parsed keys keep their escapes).
    public init(members: [Member]) {
        self.members = members
    }

    /// The value of the last member whose key means `key`, or nil.
    public subscript(key: String) -> JSONValue? {
        members.last(where: { $0.key.means(key) })?.value
    }

    /// Replaces the value of every member whose key means `key` (each key stays as written), or appends a member
    /// at the end when there is none.
    public mutating func set(_ key: String, _ value: JSONValue) {
        var found = false
        for index in members.indices where members[index].key.means(key) {
            members[index].value = value
            found = true
        }
        if !found { members.append((JSONString(key), value)) }
    }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.count == rhs.members.count
            && zip(lhs.members, rhs.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(members.count)
        for member in members {
            hasher.combine(member.key)
            hasher.combine(member.value)
        }
    }
}
