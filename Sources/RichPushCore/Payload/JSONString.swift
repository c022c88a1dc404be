/// A JSON string (a value or an object's key): its decoded value, and the exact text between the quotes when
/// it was parsed with escapes.
///
/// Writing a parsed string reproduces its literal, so `"\u00e9"` and lone surrogates such as `"\ud800"` (which
/// a Swift `String` cannot hold: its `value` has U+FFFD there) survive a round trip as written.
public struct JSONString: Sendable, Hashable {
    enum Storage: Sendable {
        /// Made in code.
        case text(String)
        /// The string at this tape entry of a parsed document.
        case parsed(JSONDocument, Int)
    }

    let storage: Storage

    /// A string made in code; it is written with the minimal escapes.
    public init(_ value: String) {
        storage = .text(value)
    }

    /// The string at tape entry `index` of `document`.
    init(document: JSONDocument, index: Int) {
        storage = .parsed(document, index)
    }

    /// The decoded text.
    public var value: String {
        switch storage {
        case .text(let text): return text
        case .parsed(let document, let index): return document.string(index)
        }
    }

    /// Whether the decoded text may begin with `{` or `[` after JSON's whitespace, judged without decoding a
    /// parsed string: its first byte is one of those, whitespace, or an escape (which may stand for any).
    var mayOpenContainer: Bool {
        let first: UInt8?
        switch storage {
        case .text(let text): first = text.utf8.first
        case .parsed(let document, let index):
            let range = document.contents(index)
            first = range.isEmpty ? nil : document.text[range.lowerBound]
        }
        guard let first else { return false }
        return first == UInt8(ascii: "{") || first == UInt8(ascii: "[") || first == UInt8(ascii: "\\")
            || first == 0x20 || first == 0x09 || first == 0x0A || first == 0x0D
    }

    /// The source text between the quotes, when it differs from `value` (it had escapes).
    public var literal: String? {
        guard case .parsed(let document, let index) = storage, document.isEscaped(index) else { return nil }
        return String(decoding: document.text[document.contents(index)], as: UTF8.self)
    }

    /// Whether the literal escapes a UTF-16 surrogate that is not half of a pair (`"\ud800"`), which `value` holds as
    /// U+FFFD: text no Unicode string on a phone holds either.
    package var hasLoneSurrogate: Bool {
        guard case .parsed(let document, let index) = storage, document.isEscaped(index) else { return false }
        var loneSurrogate = false
        _ = document.decoded(document.contents(index), loneSurrogate: &loneSurrogate)
        return loneSurrogate
    }

    /// Whether the decoded text is `name`, scalar by scalar (see `JSONObject` for why not `==`).
    func means(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { means($0) }
    }

    /// Whether the decoded text is exactly the UTF-8 `name`.
    func means(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        switch storage {
        case .text(let text): return text.utf8.elementsEqual(name)
        case .parsed(let document, let index): return document.string(index, is: name)
        }
    }

    public static func == (lhs: JSONString, rhs: JSONString) -> Bool {
        lhs.value == rhs.value && lhs.literal == rhs.literal
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(value)
        hasher.combine(literal)
    }
}
