/// A JSON array: a collection of values. A parsed array reads its elements from its document's tape as they are
/// asked for; its indices are positions on that tape (use `enumerated()` for ordinals).
public struct JSONArray: Sendable, Hashable, Collection, ExpressibleByArrayLiteral {
    enum Storage: Sendable {
        /// The array at this tape entry of a parsed document.
        case parsed(JSONDocument, Int)
        /// Made in code.
        case built([PushPayload.JSON])
    }

    /// A position in the array.
    public struct Index: Sendable, Comparable {
        let position: Int
        public static func < (lhs: Index, rhs: Index) -> Bool { lhs.position < rhs.position }
    }

    let storage: Storage

    /// An array of these elements.
    public init(_ elements: [PushPayload.JSON]) {
        storage = .built(elements)
    }

    public init(arrayLiteral elements: PushPayload.JSON...) {
        storage = .built(elements)
    }

    /// The array at tape entry `index` of `document`.
    init(document: JSONDocument, index: Int) {
        storage = .parsed(document, index)
    }

    public var startIndex: Index {
        switch storage {
        case .built: return Index(position: 0)
        case .parsed(let document, let index): return Index(position: document.children(of: index).lowerBound)
        }
    }

    public var endIndex: Index {
        switch storage {
        case .built(let elements): return Index(position: elements.count)
        case .parsed(let document, let index): return Index(position: document.children(of: index).upperBound)
        }
    }

    public func index(after index: Index) -> Index {
        switch storage {
        case .built: return Index(position: index.position + 1)
        case .parsed(let document, _): return Index(position: document.next(after: index.position))
        }
    }

    public subscript(index: Index) -> PushPayload.JSON {
        switch storage {
        case .built(let elements): return elements[index.position]
        case .parsed(let document, _): return document.value(at: index.position)
        }
    }

    public static func == (lhs: JSONArray, rhs: JSONArray) -> Bool {
        lhs.elementsEqual(rhs)
    }

    public func hash(into hasher: inout Hasher) {
        for element in self { hasher.combine(element) }
    }
}
