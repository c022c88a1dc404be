import RichPushCore

/// User-defined conventions, described in JSON (`richpush --conventions FILE`):
///
/// ```json
/// {"conventions": [
///   {"name": "acme", "url": ["acme", "media", "url"], "hint": ["acme", "media", "type"], "identifier": "acme"},
///   {"name": "legacy", "url": ["extra", "@json", "image"]}
/// ]}
/// ```
/// `url` (required) and `hint` (optional) are key paths from the payload's root; the step `@json` parses a
/// JSON-encoded string. `identifier` defaults to the name. Names are lowercase letters, digits, `_` and `-`,
/// unique, and not a built-in convention's. A file declares at most `maximumConventions`.
public enum ConventionFile {
    /// How many conventions a file may declare: 256. Every convention reads every payload (a `@json` step parses its
    /// string again for each), so a payload costs about this many times its size at most; a file of 20,000 took
    /// `explain` to 5 GB on one payload with a 131 KB field.
    public static let maximumConventions = 256

    /// Parses the file's text.
    /// - Throws: `ConventionFileError` naming the bad entry and what is wrong with it.
    public static func parse(_ bytes: some Collection<UInt8>) throws(ConventionFileError) -> [KeyPathConvention] {
        let value: PushPayload.JSON
        do {
            value = try JSONParser().parseFile(bytes)
        } catch {
            throw ConventionFileError("the file is not JSON: \(error.detail)")
        }
        guard case .object(let root) = value, case .array(let entries)? = root["conventions"] else {
            throw ConventionFileError("expected an object with a \"conventions\" array")
        }
        if let twice = repeatedKey(root) { throw ConventionFileError("\"\(twice)\" is given twice") }
        guard entries.count <= maximumConventions else {
            throw ConventionFileError(
                "\"conventions\" has \(entries.count) entries; a file declares at most \(maximumConventions)")
        }
        var conventions: [KeyPathConvention] = []
        var names = Set(ConventionRegistry.standard.conventions.map(\.name))
        for (index, entry) in entries.enumerated() {
            let label = "conventions[\(index)]"
            guard case .object(let object) = entry else {
                throw ConventionFileError("\(label): expected an object, found \(entry.kindDescription)")
            }
            // Which of two a reader takes differs (this parser the last): neither is guessed.
            if let twice = repeatedKey(object) {
                throw ConventionFileError("\(label): \"\(twice)\" is given twice")
            }
            guard let name = object["name"]?.stringValue, !name.isEmpty,
                name.utf8.allSatisfy({
                    (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F || $0 == 0x2D
                })
            else {
                throw ConventionFileError("\(label): \"name\" must be a non-empty string of a-z, 0-9, _ and -")
            }
            guard names.insert(name).inserted else {
                throw ConventionFileError("\(label) (\(name)): the name is already taken (built-in or earlier entry)")
            }
            let url = try path(object["url"], label: "\(label) (\(name)): \"url\"", required: true)!
            let hint = try path(object["hint"], label: "\(label) (\(name)): \"hint\"", required: false)
            var identifier = name
            if let given = object["identifier"] {
                guard let text = given.stringValue, !text.isEmpty else {
                    throw ConventionFileError("\(label) (\(name)): \"identifier\" must be a non-empty string")
                }
                identifier = text
            }
            for key in object.members.map(\.key.value) where !["name", "url", "hint", "identifier"].contains(key) {
                throw ConventionFileError("\(label) (\(name)): unknown field \"\(key)\"")
            }
            conventions.append(KeyPathConvention(name: name, path: url, hintPath: hint, identifier: identifier))
        }
        return conventions
    }

    /// The first key `object` gives more than once, or nil.
    private static func repeatedKey(_ object: JSONObject) -> String? {
        var seen = Set<String>()
        var repeated: String?
        object.forEachKey { key in
            if repeated == nil, !seen.insert(key).inserted { repeated = key }
        }
        return repeated
    }

    private static func path(_ value: PushPayload.JSON?, label: String, required: Bool) throws(ConventionFileError)
        -> [String]?
    {
        guard let value else {
            if required { throw ConventionFileError("\(label) is required") }
            return nil
        }
        guard case .array(let steps) = value, !steps.isEmpty,
            steps.allSatisfy({ ($0.stringValue.map { !$0.isEmpty }) ?? false })
        else {
            throw ConventionFileError(
                "\(label) must be a non-empty array of keys (strings; \"@json\" parses a JSON string)")
        }
        let keys = steps.compactMap(\.stringValue)
        guard keys.last != KeyPathConvention.jsonStep else {
            throw ConventionFileError("\(label) cannot end with \"@json\"")
        }
        return keys
    }
}
