/// Reads the members of a JSON object that RichPush wrote, for the `Decodable` conformances of its result types
/// (`EnrichmentResult`, `FetchedMedia`, ...): each type reads the object its `Encodable` side writes. A member that
/// is absent or `null` reads as nil; one of the wrong kind throws a `DecodingError` naming its path.
package struct JSONFields {
    /// The object read.
    package let object: JSONObject
    /// Where it is, for errors: `attachments[0].original`.
    package let path: String

    /// The members of `value`, which must be an object.
    package init(_ value: PushPayload.JSON, path: String) throws {
        guard case .object(let object) = value else {
            throw Self.error(path, "expected an object, got \(value.kindDescription)")
        }
        self.object = object
        self.path = path
    }

    /// A `DecodingError` saying what is wrong at `path`.
    package static func error(_ path: String, _ what: String) -> DecodingError {
        DecodingError.dataCorrupted(DecodingError.Context(codingPath: [], debugDescription: "\(path): \(what)"))
    }

    /// The value of member `key`, nil when absent or null.
    package func value(_ key: String) -> PushPayload.JSON? {
        guard let value = object[key], value != .null else { return nil }
        return value
    }

    /// `value`, or the error saying member `key` is missing.
    package func required<T>(_ value: T?, _ key: String) throws -> T {
        guard let value else { throw Self.error(path(key), "missing") }
        return value
    }

    /// Member `key` as a string.
    package func string(_ key: String) throws -> String? {
        try read(key, "a string") { $0.stringValue }
    }

    /// Member `key` as an integer.
    package func int(_ key: String) throws -> Int? {
        try read(key, "an integer") { if case .number(let text) = $0 { Int(text) } else { nil } }
    }

    /// Member `key` as a number.
    package func double(_ key: String) throws -> Double? {
        try read(key, "a number") { if case .number(let text) = $0 { Double(text) } else { nil } }
    }

    /// Member `key` as a boolean.
    package func bool(_ key: String) throws -> Bool? {
        try read(key, "a boolean") { if case .bool(let flag) = $0 { flag } else { nil } }
    }

    /// Member `key` as an array's elements.
    package func array(_ key: String) throws -> [PushPayload.JSON]? {
        try read(key, "an array") { if case .array(let array) = $0 { Array(array) } else { nil } }
    }

    /// Member `key` as an object, made into `T` by `make` (given the object and its path).
    package func object<T>(_ key: String, _ make: (PushPayload.JSON, String) throws -> T) throws -> T? {
        guard let value = value(key) else { return nil }
        return try make(value, path(key))
    }

    /// The elements of array member `key`, each made into `T` by `make` (given the element and its path).
    package func elements<T>(_ key: String, _ make: (PushPayload.JSON, String) throws -> T) throws -> [T]? {
        try array(key)?.enumerated().map { index, element in try make(element, "\(path(key))[\(index)]") }
    }

    private func path(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    private func read<T>(_ key: String, _ kind: String, _ convert: (PushPayload.JSON) -> T?) throws -> T? {
        guard let value = value(key) else { return nil }
        guard let converted = convert(value) else {
            throw Self.error(path(key), "expected \(kind), got \(value.kindDescription)")
        }
        return converted
    }
}
