extension PushPayload.JSON {
    /// Which strings holding JSON `replacingStrings` searches inside.
    package enum JSONStringDescent: Sendable {
        /// The top-level members with these names whose string holds a JSON object (ZEGOCLOUD's `payload`,
        /// Notifee's `notifee_options`), and no string inside those.
        case topLevel(Set<String>)
        /// Every string, at any level, whose text is a JSON object or array, and the strings inside those, up to
        /// `levels` strings deep (each level escapes the one inside it again, so a payload's size bounds it too).
        case everywhere(levels: Int)
    }

    /// This value with its strings replaced, through objects and arrays: `replacement` is asked for each string, and
    /// nil keeps it. A string that `descent` names and that holds JSON has its strings replaced inside instead, and
    /// is encoded again only when something in it changed. Returns nil when nothing changed, so that what was not
    /// touched keeps its text as parsed. Shared by the template renderer (top-level strings: it renders only what
    /// ZEGOCLOUD and Notifee read) and the publisher's URL rewrite (everywhere: a custom convention's `@json` step
    /// can read a JSON string at any key).
    package func replacingStrings<Failure: Error>(
        insideJSONStrings descent: JSONStringDescent = .topLevel([]),
        _ replacement: (JSONString) throws(Failure) -> PushPayload.JSON?
    ) throws(Failure) -> PushPayload.JSON? {
        try replacing(replacement, descent: descent, atRoot: true)
    }

    private func replacing<Failure: Error>(
        _ replacement: (JSONString) throws(Failure) -> PushPayload.JSON?, descent: JSONStringDescent, atRoot: Bool
    ) throws(Failure) -> PushPayload.JSON? {
        switch self {
        case .object(let object):
            var members = object.members
            var changed = false
            for index in members.indices {
                let member = members[index]
                let replaced: PushPayload.JSON?
                if case .topLevel(let keys) = descent, atRoot, keys.contains(member.key.value),
                    case .string(let text) = member.value,
                    let inside = try Self.replacingInside(text, replacement, descent: .topLevel([]))
                {
                    replaced = inside
                } else {
                    replaced = try member.value.replacing(replacement, descent: descent, atRoot: false)
                }
                if let replaced {
                    members[index].value = replaced
                    changed = true
                }
            }
            return changed ? .object(JSONObject(members: members)) : nil
        case .array(let items):
            var elements = Array(items)
            var changed = false
            for index in elements.indices {
                if let replaced = try elements[index].replacing(replacement, descent: descent, atRoot: false) {
                    elements[index] = replaced
                    changed = true
                }
            }
            return changed ? .array(elements) : nil
        case .string(let text):
            if case .everywhere(let levels) = descent, levels > 0,
                let inside = try Self.replacingInside(text, replacement, descent: .everywhere(levels: levels - 1))
            {
                return inside
            }
            return try replacement(text)
        default:
            return nil
        }
    }

    /// The string `text` encoded again with its strings replaced, when it holds a JSON object (or, searched
    /// everywhere, an array) and something in it changed: `.some(nil)` when it holds one and nothing changed, nil
    /// when it holds none.
    private static func replacingInside<Failure: Error>(
        _ text: JSONString, _ replacement: (JSONString) throws(Failure) -> PushPayload.JSON?,
        descent: JSONStringDescent
    ) throws(Failure) -> PushPayload.JSON?? {
        // Only a text that may open a container is parsed: most strings (URLs, titles) do not, and are not decoded
        // here (the replacement decodes them); the parse decides for the rest.
        guard text.mayOpenContainer else { return nil }
        let parsed: PushPayload.JSON
        switch try? JSONParser().parse(Array(text.value.utf8)) {
        case .object(let inner)?: parsed = .object(inner)
        case .array(let inner)?:
            guard case .everywhere = descent else { return nil }
            parsed = .array(inner)
        default: return nil
        }
        guard let replaced = try parsed.replacing(replacement, descent: descent, atRoot: false) else {
            return .some(nil)
        }
        return .some(.text(JSONWriter.string(replaced)))
    }
}
