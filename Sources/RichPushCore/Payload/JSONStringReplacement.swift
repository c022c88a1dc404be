extension PushPayload.JSON {
    /// This value with its strings replaced, through objects and arrays: `replacement` is asked for each string, and
    /// nil keeps it. At the top level, a member named in `jsonStringKeys` whose string holds a JSON object
    /// (ZEGOCLOUD's `payload`, Notifee's `notifee_options`) has its strings replaced inside instead, and is encoded
    /// again only when something in it changed. Returns nil when nothing changed, so that what was not touched keeps
    /// its text as parsed. Shared by the template renderer and the publisher's URL rewrite.
    package func replacingStrings<Failure: Error>(
        insideJSONStringsAt jsonStringKeys: Set<String> = [],
        _ replacement: (JSONString) throws(Failure) -> PushPayload.JSON?
    ) throws(Failure) -> PushPayload.JSON? {
        try replacing(replacement, jsonStringKeys: jsonStringKeys)
    }

    private func replacing<Failure: Error>(
        _ replacement: (JSONString) throws(Failure) -> PushPayload.JSON?, jsonStringKeys: Set<String>
    ) throws(Failure) -> PushPayload.JSON? {
        switch self {
        case .object(let object):
            var members = object.members
            var changed = false
            for index in members.indices {
                let member = members[index]
                if jsonStringKeys.contains(member.key.value), case .string(let text) = member.value,
                    case .object(let inner)? = try? JSONParser().parse(Array(text.value.utf8))
                {
                    if let replaced = try PushPayload.JSON.object(inner).replacing(replacement, jsonStringKeys: []) {
                        members[index].value = .text(JSONWriter.string(replaced))
                        changed = true
                    }
                } else if let replaced = try member.value.replacing(replacement, jsonStringKeys: []) {
                    members[index].value = replaced
                    changed = true
                }
            }
            return changed ? .object(JSONObject(members: members)) : nil
        case .array(let items):
            var elements = Array(items)
            var changed = false
            for index in elements.indices {
                if let replaced = try elements[index].replacing(replacement, jsonStringKeys: []) {
                    elements[index] = replaced
                    changed = true
                }
            }
            return changed ? .array(elements) : nil
        case .string(let text):
            return try replacement(text)
        default:
            return nil
        }
    }
}
