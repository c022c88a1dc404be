#if canImport(Glibc)
    import Glibc
#endif

/// A parsed JSON text and its tape, the index through which values are read from the text in place.
///
/// This is the whole of the parsed representation: a tree of Swift values (a `String` or an array per node) took
/// 6 to 16 times the input (issue 8), while the tape takes 4 bytes per entry. There is one entry per value and
/// per member name, in document order:
/// - a string, number, `true`, `false` or `null`, and a key: the byte offset where its token starts; bit 31 marks
///   a string written with escapes (so one without is its own decoded text);
/// - an array or object: two entries, the offset of its opening bracket, then the tape index just past its last
///   descendant, so that a reader steps over it at once.
///
/// Each entry stands for a distinct byte of the text (a token's first byte, a container's two brackets), so the
/// tape takes at most 4 bytes per byte of text: a document holds at most 5 times its text, whatever its shape.
final class JSONDocument: Sendable {
    /// The text, valid UTF-8 and valid JSON.
    let text: [UInt8]
    /// The entries, as described above.
    let tape: [UInt32]
    /// Whether the value has no white space between its tokens (as most senders write it): then the text of any
    /// value in it is one run of bytes, written back whole.
    let isCompact: Bool

    /// Marks a string entry whose text has escapes.
    static let escapedFlag: UInt32 = 1 << 31
    /// The largest text a tape can address.
    static let maximumBytes = Int(escapedFlag) - 1

    init(text: [UInt8], tape: [UInt32], isCompact: Bool) {
        self.text = text
        self.tape = tape
        self.isCompact = isCompact
    }

    /// Where the token of entry `index` starts in the text.
    func offset(_ index: Int) -> Int { Int(tape[index] & ~Self.escapedFlag) }

    /// The first byte of entry `index`'s token: `{`, `[`, `"`, `t`, `f`, `n`, or a number's first character.
    func lead(_ index: Int) -> UInt8 { text[offset(index)] }

    /// Whether entry `index` is an array or an object (it takes two entries).
    func isContainer(_ index: Int) -> Bool {
        let byte = lead(index)
        return byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[")
    }

    /// The entry just past the value at `index` (and its descendants).
    func next(after index: Int) -> Int { isContainer(index) ? Int(tape[index + 1]) : index + 1 }

    /// The first entry inside the container at `index`, and the entry just past its end.
    func children(of index: Int) -> Range<Int> { index + 2..<Int(tape[index + 1]) }

    /// The entries of the container at `index`: an array's elements, or an object's keys (each member's value is
    /// the entry after its key).
    func items(of index: Int) -> UnfoldSequence<Int, Int> {
        let end = Int(tape[index + 1])
        let step = lead(index) == UInt8(ascii: "{") ? 1 : 0
        return sequence(state: index + 2) { entry in
            guard entry < end else { return nil }
            defer { entry = self.next(after: entry + step) }
            return entry
        }
    }

    /// The value of the last member of the object at `index` whose key is `name` (the last one wins, as JSON
    /// readers do), as the value's entry; nil when there is none. The walk of `items(of:)` in a loop, without its
    /// sequence's closure context: every convention looks up its keys in every payload.
    func member(of index: Int, named name: UnsafeBufferPointer<UInt8>) -> Int? {
        var found: Int?
        var entry = index + 2
        let end = Int(tape[index + 1])
        while entry < end {
            if string(entry, is: name) { found = entry + 1 }
            entry = next(after: entry + 1)
        }
        return found
    }

    /// The value at `index`: containers and strings as views of this document, numbers as their text.
    func value(at index: Int) -> PushPayload.JSON {
        switch lead(index) {
        case UInt8(ascii: "{"): return .object(JSONObject(document: self, index: index))
        case UInt8(ascii: "["): return .array(JSONArray(document: self, index: index))
        case UInt8(ascii: "\""): return .string(JSONString(document: self, index: index))
        case UInt8(ascii: "t"): return .bool(true)
        case UInt8(ascii: "f"): return .bool(false)
        case UInt8(ascii: "n"): return .null
        default: return .number(String(decoding: text[token(index)], as: UTF8.self))
        }
    }

    // MARK: - Tokens

    /// The text of the value at `index`, in a compact document (`isCompact`). A container's text ends where its
    /// last member's or element's does, plus its closing bracket.
    func compactText(_ index: Int) -> Range<Int> {
        guard isContainer(index) else { return token(index) }
        var last: Int?
        for entry in items(of: index) { last = entry }
        guard let last else { return offset(index)..<offset(index) + 2 }
        let end = compactText(lead(index) == UInt8(ascii: "{") ? last + 1 : last).upperBound
        return offset(index)..<end + 1
    }

    /// The text of the scalar or key at `index`: a string with its quotes, a number, a literal.
    func token(_ index: Int) -> Range<Int> {
        let start = offset(index)
        let end = text.withUnsafeBufferPointer { Self.tokenEnd(in: $0, at: start, escaped: isEscaped(index)) }
        return start..<end
    }

    /// The text between the quotes of the string at `index`.
    func contents(_ index: Int) -> Range<Int> {
        let token = token(index)
        return token.lowerBound + 1..<token.upperBound - 1
    }

    /// Where the scalar token starting at `start` in `text` ends; `escaped` is a string entry's flag.
    static func tokenEnd(in text: UnsafeBufferPointer<UInt8>, at start: Int, escaped: Bool) -> Int {
        switch text[start] {
        case UInt8(ascii: "\""):
            let base = text.baseAddress!
            guard escaped else {
                // Without escapes, the first quote after the opening one ends the string.
                let quote = memchr(base + start + 1, Int32(UInt8(ascii: "\"")), text.count - start - 1)!
                return UnsafeRawPointer(quote) - UnsafeRawPointer(base) + 1
            }
            // With them, a backslash takes the byte after it along.
            var end = start + 1
            while base[end] != UInt8(ascii: "\"") { end += base[end] == UInt8(ascii: "\\") ? 2 : 1 }
            return end + 1
        case UInt8(ascii: "t"), UInt8(ascii: "n"): return start + 4
        case UInt8(ascii: "f"): return start + 5
        default:
            var end = start + 1
            while end < text.count, isNumberByte(text[end]) { end += 1 }
            return end
        }
    }

    /// Whether the string at `index` was written with escapes.
    func isEscaped(_ index: Int) -> Bool { tape[index] & Self.escapedFlag != 0 }

    static func isNumberByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
            UInt8(ascii: "e"), UInt8(ascii: "E"):
            return true
        default:
            return false
        }
    }

    // MARK: - Strings

    /// The decoded text of the string at `index`. A lone surrogate decodes to U+FFFD (the text keeps it).
    func string(_ index: Int) -> String {
        let range = contents(index)
        guard isEscaped(index) else { return String(decoding: text[range], as: UTF8.self) }
        return String(decoding: decoded(range), as: UTF8.self)
    }

    /// Whether the string at `index` decodes to exactly the bytes of `name`.
    func string(_ index: Int, is name: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !isEscaped(index) else { return decoded(contents(index)).elementsEqual(name) }
        // Without escapes, the name's length tells where the closing quote must be: no scan. A name holding a quote
        // is no such string's (its text would end at that quote): `a":` matched the key `a` and the quote after it.
        let start = offset(index) + 1
        let end = start + name.count
        guard end < text.count, text[end] == UInt8(ascii: "\""),
            name.isEmpty || memchr(name.baseAddress!, 0x22, name.count) == nil
        else { return false }
        return text.withUnsafeBufferPointer { buffer in
            name.isEmpty || memcmp(buffer.baseAddress! + start, name.baseAddress!, name.count) == 0
        }
    }

    /// The UTF-8 of the escaped string text in `range` (already validated by the parser).
    func decoded(_ range: Range<Int>) -> [UInt8] {
        var loneSurrogate = false
        return decoded(range, loneSurrogate: &loneSurrogate)
    }

    /// `decoded(_:)`, setting `loneSurrogate` when it met an escaped UTF-16 surrogate that is not half of a pair.
    func decoded(_ range: Range<Int>, loneSurrogate: inout Bool) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(range.count)
        var position = range.lowerBound
        while position < range.upperBound {
            let byte = text[position]
            guard byte == UInt8(ascii: "\\") else {
                output.append(byte)
                position += 1
                continue
            }
            let escape = text[position + 1]
            position += 2
            switch escape {
            case UInt8(ascii: "b"): output.append(0x08)
            case UInt8(ascii: "f"): output.append(0x0C)
            case UInt8(ascii: "n"): output.append(0x0A)
            case UInt8(ascii: "r"): output.append(0x0D)
            case UInt8(ascii: "t"): output.append(0x09)
            case UInt8(ascii: "u"):
                let first = hex4(at: position)
                position += 4
                var scalar = Unicode.Scalar(first)
                if (0xD800...0xDBFF).contains(first), position + 6 <= range.upperBound,
                    text[position] == UInt8(ascii: "\\"), text[position + 1] == UInt8(ascii: "u")
                {
                    let second = hex4(at: position + 2)
                    if (0xDC00...0xDFFF).contains(second) {
                        scalar = Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
                        position += 6
                    }
                }
                // A lone surrogate decodes to U+FFFD; the text keeps what was written.
                if scalar == nil { loneSurrogate = true }
                output.append(contentsOf: UTF8.encode(scalar ?? "\u{FFFD}")!)
            default: output.append(escape)  // \" \\ \/
            }
        }
        return output
    }

    /// The value of the four hex digits at `position` (validated by the parser).
    func hex4(at position: Int) -> UInt32 {
        var value: UInt32 = 0
        for byte in text[position..<position + 4] {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            default: digit = byte - UInt8(ascii: "A") + 10
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }
}
