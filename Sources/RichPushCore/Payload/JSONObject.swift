/// A JSON object's members in source order. All members, duplicates included, are kept and written back, each
/// key as it was written (a key is a `JSONString`, as a string value is).
///
/// Lookups compare a key's decoded text with the name asked for, Unicode scalar by scalar: `"adb\u005fmedia"`
/// is found as `adb_media`, as the iPhone's `userInfo` (an `NSDictionary` whose keys compare code unit by code
/// unit) finds it; `"e\u0301"` is not `"\u00e9"`. The last member that matches wins, as JavaScript's `JSON.parse`
/// keeps the last.
///
/// A parsed object reads its members from its document's tape; changing it (`set`, `members`) copies its members
/// (views of their values, nothing deeper) into the object.
public struct JSONObject: Sendable, Hashable {
    /// One member: its key as written, and its value.
    public typealias Member = (key: JSONString, value: PushPayload.JSON)

    enum Storage: Sendable {
        /// The object at this tape entry of a parsed document.
        case parsed(JSONDocument, Int)
        /// Made or changed in code.
        case built([Member])
    }

    var storage: Storage

    /// An object with these members, in this order; each key is written with the minimal escapes.
    public init(_ members: [(key: String, value: PushPayload.JSON)] = []) {
        storage = .built(members.map { (JSONString($0.key), $0.value) })
    }

    /// An object with these members, keys as they are (parsed keys keep their escapes).
    public init(members: [Member]) {
        storage = .built(members)
    }

    /// The object at tape entry `index` of `document`.
    init(document: JSONDocument, index: Int) {
        storage = .parsed(document, index)
    }

    /// The members, in order.
    public var members: [Member] {
        get {
            switch storage {
            case .built(let members):
                return members
            case .parsed(let document, let index):
                return document.items(of: index).map {
                    (JSONString(document: document, index: $0), document.value(at: $0 + 1))
                }
            }
        }
        set {
            storage = .built(newValue)
        }
    }

    /// The value of the last member whose key means `key`, or nil.
    public subscript(key: String) -> PushPayload.JSON? {
        var key = key
        return key.withUTF8 { name in
            switch storage {
            case .built(let members):
                return members.last(where: { $0.key.means(name) })?.value
            case .parsed(let document, let index):
                // Straight on the tape: no member is made but the one returned.
                return document.member(of: index, named: name).map(document.value(at:))
            }
        }
    }

    /// Replaces the value of the member whose key means `key` (its key stays as written), or appends a member at
    /// the end when there is none. A key given more than once keeps its last place alone, with the new value: the
    /// value written into every duplicate had made 2,000 duplicates of an FCM `message` holding a 400 KB string an
    /// 800 MB output; and a reader keeping the first duplicate or the last sees the same value.
    public mutating func set(_ key: String, _ value: PushPayload.JSON) {
        var members: [Member]
        switch storage {
        case .built(let built):
            members = built
        case .parsed(let document, let index):
            // Made with room to add one (the result's `richpush` list), rather than mapped to its exact count
            // and copied to grow.
            members = []
            members.reserveCapacity(8)
            for entry in document.items(of: index) {
                members.append((JSONString(document: document, index: entry), document.value(at: entry + 1)))
            }
        }
        // `members` alone holds the array from here: changed in place, not copied.
        storage = .built([])
        guard let last = members.lastIndex(where: { $0.key.means(key) }) else {
            members.append((JSONString(key), value))
            storage = .built(members)
            return
        }
        members[last].value = value
        if members[..<last].contains(where: { $0.key.means(key) }) {
            var kept = members[..<last].filter { !$0.key.means(key) }
            kept.append(contentsOf: members[last...])
            members = Array(kept)
        }
        storage = .built(members)
    }

    /// Removes every member whose key means `key`.
    package mutating func remove(_ key: String) {
        members = members.filter { !$0.key.means(key) }
    }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        if case .parsed(let left, let index) = lhs.storage, case .parsed(let right, index) = rhs.storage, left === right
        {
            return true
        }
        let (left, right) = (lhs.members, rhs.members)
        return left.count == right.count && zip(left, right).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        let members = self.members
        hasher.combine(members.count)
        for member in members {
            hasher.combine(member.key)
            hasher.combine(member.value)
        }
    }
}

extension JSONObject {
    /// Calls `body` with the decoded text of each member's key, in order, duplicates included; a parsed object's
    /// straight from the tape, without making its members.
    package func forEachKey(_ body: (String) -> Void) {
        switch storage {
        case .built(let members):
            for member in members { body(member.key.value) }
        case .parsed(let document, let index):
            var entry = index + 2
            let end = Int(document.tape[index + 1])
            while entry < end {
                body(document.string(entry))
                entry = document.next(after: entry + 1)
            }
        }
    }
}
