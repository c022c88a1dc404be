/// A JSON value that keeps what the text said: object members in their order (duplicates included), numbers as
/// their literal text, and strings, keys included, with the escapes they were written with.
///
/// `JSONValue` is what lets RichPush hand back a payload that equals its input except where it was mutated:
/// `"mutable-content": 1` stays `1`, `1.0` stays `1.0`, and a 30-digit integer stays 30 digits.
///
/// A parsed value is a view of its `JSONDocument` (the input text and its tape): objects, arrays and strings read
/// the text in place, and a payload in memory takes about twice its text (at most five times, whatever its
/// shape). An object changed in code, or made in code, holds its members itself.
public enum JSONValue: Sendable, Hashable {
    /// An object, its members in source order.
    case object(JSONObject)
    /// An array.
    case array(JSONArray)
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

    /// An array value made in code from its elements.
    public static func array(_ elements: [JSONValue]) -> JSONValue { .array(JSONArray(elements)) }

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
