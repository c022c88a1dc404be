import RichPushCore

/// Expands a template notification with its properties, following Azure Notification Hubs' template
/// expression language, into a payload the other commands accept.
///
/// A JSON string value of the template is an expression when it is, as a whole, one of:
/// - `$(prop)`: the property's text (empty when missing); `$(prop, n)`: clipped to n characters;
/// - `.(prop)`, `.(prop, n)`: like `$`, but a clipped text ends with "..." within the n characters;
/// - `%(prop)`: the text, percent-encoded for a URI;
/// - `#(prop)`: like `$`, but a numeric text becomes a JSON number (when it is the whole value);
/// - `{ e1 + e2 + ... }`: the concatenation of expressions and literals (`'text'` or `"text"`).
/// Other strings, and every key, are left as they are, as Notification Hubs leaves them: `"Hello $(name)"`,
/// `"$(name) and more"` (a call with text after it), `"{}"` and any string that is a JSON object. A string that
/// has an expression's shape and breaks its grammar (`"$(name"`, `"{'a' + }"`) is an error. Property names are
/// case-insensitive; lengths count UTF-16 code units, as .NET does.
///
/// Where RichPush goes beyond Notification Hubs: the top-level `payload` (ZEGOCLOUD) and `notifee_options`
/// (Notifee) may be JSON objects encoded as strings, and both are RichPush's conventions: such a string is
/// parsed, rendered inside, and encoded again (kept byte for byte when nothing in it changed).
public struct TemplateRenderer: Sendable {
    /// The properties, by lowercased name.
    private let properties: [String: String]
    /// Whether a missing property is an error (else it becomes an empty string, as Notification Hubs does).
    public var strict: Bool
    /// The most bytes the expressions of one template may produce together. Default 1 MiB, the payload limit of the
    /// commands that read what `render` prints: the inputs are bounded, but a template of 1 MiB repeating a property
    /// of 1 MiB asked for a hundred gigabytes before anything was printed.
    public var maximumBytes = 1 << 20

    /// A renderer over `properties` (a JSON object of name to string or number).
    /// - Throws: `TemplateError` when `properties` is not such an object.
    public init(properties: PushPayload.JSON, strict: Bool = false) throws(TemplateError) {
        guard case .object(let object) = properties else {
            throw TemplateError("the properties must be a JSON object of name to value")
        }
        var table: [String: String] = [:]
        for member in object.members {
            let name = member.key.value
            switch member.value {
            case .string(let text): table[name.lowercased()] = text.value
            case .number(let text): table[name.lowercased()] = text
            case .bool(let flag): table[name.lowercased()] = flag ? "true" : "false"
            default:
                throw TemplateError(
                    "property '\(name)' holds \(member.value.kindDescription); properties are strings or numbers")
            }
        }
        self.properties = table
        self.strict = strict
    }

    /// The top-level keys whose string may hold a JSON object to render inside (ZEGOCLOUD, Notifee).
    package static let jsonStringKeys: Set<String> = ["payload", "notifee_options"]

    /// Renders `template`.
    /// - Throws: `TemplateError` naming a malformed expression, or (strict) a missing property.
    public func render(_ template: PushPayload.JSON) throws(TemplateError) -> PushPayload.JSON {
        var budget = maximumBytes
        let descent = PushPayload.JSON.JSONStringDescent.topLevel(Self.jsonStringKeys)
        return try template.replacingStrings(insideJSONStrings: descent) { (text) throws(TemplateError) in
            try evaluate(text.value, budget: &budget)
        } ?? template
    }

    /// The value of a string that is an expression, or nil when it is a plain string.
    func evaluate(_ text: String) throws(TemplateError) -> PushPayload.JSON? {
        var budget = maximumBytes
        return try evaluate(text, budget: &budget)
    }

    /// `evaluate(_:)`, each property's text counted against `budget` (bytes) before it is kept.
    func evaluate(_ text: String, budget: inout Int) throws(TemplateError) -> PushPayload.JSON? {
        let trimmed = text.trimmingSpaces
        if trimmed.hasPrefix("{"), trimmed.hasSuffix("}") {
            // A JSON object in a string ("{}", an app's JSON-encoded data) is text, not a concatenation; so is one
            // nested past the parser's depth (64), which no concatenation is either (it was refused as one).
            do throws(PayloadError) {
                if case .object = try JSONParser().parse(Array(trimmed.utf8)) { return nil }
            } catch {
                if error.code == .tooDeep { return nil }
            }
            var parser = ExpressionParser(Array(trimmed.dropFirst().dropLast()), source: text)
            var parts: [String] = []
            repeat {
                let part = try parser.term(self)
                try spend(part, from: &budget)
                parts.append(part)
            } while try parser.plus()
            try parser.end()
            return .text(parts.joined())
        }
        guard let first = trimmed.first, "$.%#".contains(first), trimmed.dropFirst().first == "(" else { return nil }
        var parser = ExpressionParser(Array(trimmed), source: text)
        let call = try parser.call()
        // Text after a whole call ("$(name) and more") makes the string plain text, as Notification Hubs reads it.
        guard parser.isAtEnd else { return nil }
        let value = try apply(call)
        try spend(value, from: &budget)
        if call.function == "#", Self.isNumber(value) { return .number(value) }
        return .text(value)
    }

    /// Takes `text`'s bytes from `budget`, or throws when they are more than it holds.
    private func spend(_ text: String, from budget: inout Int) throws(TemplateError) {
        budget -= text.utf8.count
        guard budget >= 0 else {
            throw TemplateError(
                "the expressions produce more than \(maximumBytes) bytes: the payload would be too large")
        }
    }

    struct Call {
        var function: Character
        var property: String
        var limit: Int?
    }

    func apply(_ call: Call) throws(TemplateError) -> String {
        guard let value = properties[call.property.lowercased()] else {
            if strict { throw TemplateError("property '\(call.property)' is missing (--strict)") }
            return ""
        }
        switch call.function {
        case "$", "#":
            return call.limit.map { Self.prefix(value, utf16: $0) } ?? value
        case ".":
            guard let limit = call.limit, value.utf16.count > limit else { return value }
            return Self.prefix(value, utf16: max(0, limit - 3)) + String("...".prefix(limit))
        default:
            return Self.percentEncoded(value)
        }
    }

    /// The first `count` UTF-16 code units of `text`, as .NET's `Substring` counts. A surrogate pair the limit
    /// would split is left out whole: .NET would keep its lone first half, which a Swift string cannot hold.
    static func prefix(_ text: String, utf16 count: Int) -> String {
        let units = text.utf16
        var end = units.index(units.startIndex, offsetBy: count, limitedBy: units.endIndex) ?? units.endIndex
        while end > units.startIndex, String.Index(end, within: text.unicodeScalars) == nil {
            end = units.index(before: end)
        }
        return String(text.unicodeScalars[..<end])
    }

    /// JavaScript's number shape, as Notification Hubs checks it for `#(prop)`: the text alone, no space around it
    /// (the JSON parser takes surrounding white space, which went into the output with the number, line breaks and
    /// all, and broke its one line), and not negative: a JSON number that starts and ends with a digit, which rules
    /// out both.
    static func isNumber(_ text: String) -> Bool {
        let digits = UInt8(ascii: "0")...UInt8(ascii: "9")
        guard let first = text.utf8.first, let last = text.utf8.last, digits.contains(first), digits.contains(last),
            let parsed = try? JSONParser().parse(Array(text.utf8)), case .number = parsed
        else { return false }
        return true
    }

    static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                bytes.append(byte)
            default:
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Reads one expression's characters.
private struct ExpressionParser {
    let characters: [Character]
    let source: String
    var position = 0

    init(_ characters: [Character], source: String) {
        self.characters = characters
        self.source = source
    }

    func failure(_ what: String) -> TemplateError {
        TemplateError("malformed expression \"\(source)\": \(what)")
    }

    mutating func skipSpaces() {
        while position < characters.count, characters[position] == " " || characters[position] == "\t" { position += 1 }
    }

    /// A literal or a call, evaluated.
    mutating func term(_ renderer: TemplateRenderer) throws(TemplateError) -> String {
        skipSpaces()
        guard position < characters.count else { throw failure("an expression is missing") }
        let character = characters[position]
        if character == "'" || character == "\"" {
            position += 1
            var text = ""
            while position < characters.count, characters[position] != character {
                text.append(characters[position])
                position += 1
            }
            guard position < characters.count else { throw failure("unterminated literal") }
            position += 1
            return text
        }
        return try renderer.apply(call())
    }

    /// `X(name)` or `X(name, n)` with X one of $ . % #.
    mutating func call() throws(TemplateError) -> TemplateRenderer.Call {
        skipSpaces()
        guard position + 1 < characters.count, "$.%#".contains(characters[position]), characters[position + 1] == "("
        else {
            throw failure("expected $(prop), .(prop), %(prop), #(prop) or a quoted literal")
        }
        let function = characters[position]
        position += 2
        var inside = ""
        while position < characters.count, characters[position] != ")" {
            inside.append(characters[position])
            position += 1
        }
        guard position < characters.count else { throw failure("missing ')'") }
        position += 1
        let parts = inside.split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmingSpaces }
        guard let name = parts.first, !name.isEmpty, parts.count <= 2,
            name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == "." })
        else {
            throw failure("'\(inside)' is not a property name (with an optional length)")
        }
        var limit: Int? = nil
        if parts.count == 2 {
            guard let n = Int(parts[1]), n >= 0 else { throw failure("'\(parts[1])' is not a length") }
            guard function == "$" || function == "." else { throw failure("\(function)(...) takes no length") }
            limit = n
        }
        return .init(function: function, property: name, limit: limit)
    }

    /// Consumes a `+`; false at the end of the expression.
    mutating func plus() throws(TemplateError) -> Bool {
        skipSpaces()
        guard position < characters.count else { return false }
        guard characters[position] == "+" else { throw failure("expected '+' between expressions") }
        position += 1
        return true
    }

    /// Whether only spaces are left.
    var isAtEnd: Bool {
        mutating get {
            skipSpaces()
            return position == characters.count
        }
    }

    mutating func end() throws(TemplateError) {
        skipSpaces()
        guard position == characters.count else { throw failure("unexpected text after the expression") }
    }
}

extension String {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
