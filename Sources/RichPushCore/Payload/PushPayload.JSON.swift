extension PushPayload {
    /// A JSON value that keeps what the text said: object members in their order (duplicates included), numbers as
    /// their literal text, and strings, keys included, with the escapes they were written with.
    ///
    /// `PushPayload.JSON` is what lets RichPush hand back a payload that equals its input except where it was mutated:
    /// `"mutable-content": 1` stays `1`, `1.0` stays `1.0`, and a 30-digit integer stays 30 digits.
    ///
    /// A parsed value is a view of its `JSONDocument` (the input text and its tape): objects, arrays and strings read
    /// the text in place, and a payload in memory takes about twice its text (at most five times, whatever its
    /// shape). An object changed in code, or made in code, holds its members itself.
    public enum JSON: Sendable, Hashable {
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
        public static func text(_ value: String) -> PushPayload.JSON { .string(JSONString(value)) }

        /// An array value made in code from its elements.
        public static func array(_ elements: [PushPayload.JSON]) -> PushPayload.JSON { .array(JSONArray(elements)) }

        /// A number value from an integer.
        public static func integer<T: BinaryInteger>(_ value: T) -> PushPayload.JSON { .number(String(value)) }

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
}

extension PushPayload.JSON: Encodable {
    /// Encodes the value through any `Encoder`: objects as keyed containers in member order, numbers as `Int64`
    /// when their text is one, else as `Double`, strings decoded. What an encoder cannot hold (duplicate keys, a
    /// 30-digit integer, a lone surrogate) is as lossless as that encoder; `JSONWriter` writes the text exactly.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .object(let object):
            var container = encoder.container(keyedBy: MemberKey.self)
            for (key, value) in object.members {
                try container.encode(value, forKey: MemberKey(stringValue: key.value))
            }
        case .array(let array):
            var container = encoder.unkeyedContainer()
            for element in array { try container.encode(element) }
        case .string(let string):
            var container = encoder.singleValueContainer()
            try container.encode(string.value)
        case .number(let text):
            var container = encoder.singleValueContainer()
            if let integer = Int64(text) {
                try container.encode(integer)
            } else {
                try container.encode(Double(text) ?? .nan)
            }
        case .bool(let flag):
            var container = encoder.singleValueContainer()
            try container.encode(flag)
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        }
    }

    /// An object member's key, any string.
    private struct MemberKey: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }
}

extension PushPayload.JSON: Decodable {
    /// Decodes any JSON value through any `Decoder`. Objects keep the members in the order the decoder gives them
    /// (a `JSONDecoder` gives no order), numbers are written as the decoder returns them (an `Int64` when it is one,
    /// else a `Double`); `JSONParser` keeps the text exactly.
    public init(from decoder: any Decoder) throws {
        if let object = try? decoder.container(keyedBy: MemberKey.self) {
            self = .object(
                JSONObject(
                    try object.allKeys.map { ($0.stringValue, try object.decode(PushPayload.JSON.self, forKey: $0)) }))
        } else if var array = try? decoder.unkeyedContainer() {
            var elements: [PushPayload.JSON] = []
            while !array.isAtEnd { elements.append(try array.decode(PushPayload.JSON.self)) }
            self = .array(elements)
        } else {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() {
                self = .null
            } else if let flag = try? single.decode(Bool.self) {
                self = .bool(flag)
            } else if let integer = try? single.decode(Int64.self) {
                self = .integer(integer)
            } else if let number = try? single.decode(Double.self) {
                self = .number(String(number))
            } else {
                self = .text(try single.decode(String.self))
            }
        }
    }

    /// `Self`, decoded from the JSON value `decoder` holds by `make` (a type's reading of the object it writes).
    package static func decode<T>(_ decoder: any Decoder, _ make: (PushPayload.JSON, String) throws -> T) throws -> T {
        try make(PushPayload.JSON(from: decoder), "")
    }

    /// `Self`, read by `make` from the members of the object `decoder` holds; `make` gives nil when they say
    /// nothing of it, and the error then says `missing`.
    package static func decodeMembers<T>(_ decoder: any Decoder, missing: String, _ make: (JSONFields) throws -> T?)
        throws -> T
    {
        try decode(decoder) { json, path in
            guard let value = try make(JSONFields(json, path: path)) else { throw JSONFields.error(path, missing) }
            return value
        }
    }
}
