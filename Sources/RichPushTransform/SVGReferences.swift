import RichPushCore

/// Finds what in an SVG document would make a renderer reach outside it. librsvg (Debian 12's 2.54), given the
/// document from memory with no base location, still opened an absolute `file://` image reference (seen in a
/// test: it blocked on a FIFO), so RichPush does not rely on the renderer's policy: a document with any such
/// reference is refused before rendering.
///
/// Conservative, on the raw bytes: any `href` whose value is not a fragment (`#id`), any CSS `url(...)` of the same
/// kind, any `@import`, and any DTD (`<!DOCTYPE` with an internal subset or an external identifier, `<!ENTITY`).
/// Case is ignored; entity and character escapes in attribute names are not expanded by SVG renderers, so they
/// cannot hide an `href`. CSS is searched twice: as written, and as the renderer reads it (`unescaped`: XML's
/// character references expanded, then CSS's escapes), since librsvg's CSS parser un-escapes names:
/// `u\rl(data:...)`, `u\72 l(...)` and `@\69mport` were rendered, the `data:` documents behind them loaded. A
/// `data:` URI is refused too: librsvg hands an embedded image to gdk-pixbuf, whose loaders (XPM, PNM, TGA, ICO,
/// ANI, ...) would read bytes libmagic never judged, at a size `maximumPixels` never saw (a 10 x 10 document
/// holding a 20,000 x 20,000 PNG took 2.8 GB).
///
/// Also refused, what librsvg would render without end: `feTurbulence` with more than `maximumOctaves` octaves
/// (its cost grows with each, and librsvg never looks at libvips's stop while it renders a filter).
struct SVGReferences {
    /// The most octaves of noise an `feTurbulence` may ask for: each adds half the amplitude of the one before, so
    /// past 8 nothing more shows in 8-bit colour. 1,000 octaves on a 2,000 x 2,000 image rendered for more than ten
    /// minutes.
    static let maximumOctaves = 10

    /// The document as written (for what a refusal quotes) and in ASCII lowercase (what is searched), made once for
    /// both checks.
    private let document: [UInt8]
    private let text: [UInt8]
    /// `text` as CSS reads it (`unescaping`); nil when the document holds no `&` or backslash, so that it is `text`.
    private let unescaped: [UInt8]?

    init(_ document: [UInt8]) {
        self.document = document
        text = document.map(Self.lowercased)
        unescaped =
            document.contains(UInt8(ascii: "&")) || document.contains(UInt8(ascii: "\\"))
            ? Self.unescaping(document) : nil
    }

    /// Why the document asks for more than librsvg renders in bounded time, or nil.
    var unbounded: String? {
        var start = text.startIndex
        while let found = text[start...].firstRange(of: Array("numoctaves".utf8)) {
            start = found.upperBound
            guard let (index, quote) = quotedValue(after: found.upperBound) else { continue }
            let value = text[index...].prefix { $0 != quote }
            let number = value.drop(while: Self.isSpace).reversed().drop(while: Self.isSpace).reversed()
            let written = String(decoding: number.prefix(40), as: UTF8.self)
            // Only a plain integer is judged by its value: an escape (`&#49;000`), a sign, a fraction or an exponent
            // could be read by librsvg as more than its digits say.
            guard !number.isEmpty, number.allSatisfy({ (0x30...0x39).contains($0) }) else {
                return "feTurbulence numOctaves '\(written)' is not a plain integer"
            }
            if number.count > 3 || Int(written)! > Self.maximumOctaves {
                return "feTurbulence asks for \(written) octaves (at most \(Self.maximumOctaves) are rendered)"
            }
        }
        return nil
    }

    /// The encodings a document may declare: those in which every byte below 0x80 is the ASCII character, so that
    /// what the checks search for is written as they search for it. In any other (UTF-7 writes `"` as `+ACI-`, `<` as
    /// `+ADw-`; UTF-16 and EBCDIC every character otherwise) libxml2 would read what the checks never saw.
    static let readableEncodings: Set<String> = ["utf-8", "utf8", "us-ascii", "ascii", "iso-8859-1", "latin1"]

    /// The encoding the document's XML declaration names when it is not one of `readableEncodings` (or cannot be
    /// read), in lowercase; nil when there is none, or it is one of those.
    var unreadableEncoding: String? {
        var start = text.startIndex
        while let declaration = text[start...].firstRange(of: Array("<?xml".utf8)) {
            start = declaration.upperBound
            let body = text[declaration.upperBound...].prefix { $0 != UInt8(ascii: ">") }
            guard let name = body.firstRange(of: Array("encoding".utf8)) else { continue }
            guard let (valueStart, quote) = quotedValue(after: name.upperBound) else { return "(not a quoted name)" }
            let value = text[valueStart...].prefix { $0 != quote && $0 != UInt8(ascii: ">") }
            let written = String(decoding: value.prefix(40), as: UTF8.self)
            if !Self.readableEncodings.contains(written) { return written }
        }
        return nil
    }

    /// The first external reference, as written (as un-escaped, in lowercase, when escapes hid it), or nil when there
    /// is none.
    var firstExternal: String? {
        for marker in ["<!entity", "@import"] where text.firstRange(of: Array(marker.utf8)) != nil {
            return marker
        }
        if let unescaped, unescaped.firstRange(of: Array("@import".utf8)) != nil { return "@import" }
        if let doctype = text.firstRange(of: Array("<!doctype".utf8)) {
            let rest = text[doctype.upperBound...].prefix { $0 != UInt8(ascii: ">") }
            if rest.contains(UInt8(ascii: "[")) || rest.firstRange(of: Array("system".utf8)) != nil
                || rest.firstRange(of: Array("public".utf8)) != nil
            {
                return "<!DOCTYPE" + String(decoding: rest.prefix(80), as: UTF8.self)
            }
        }
        if let found = firstNotFragment("href", in: text, quoted: true) {
            return String(decoding: document[found], as: UTF8.self)
        }
        if let found = firstNotFragment("url(", in: text, quoted: false) {
            return String(decoding: document[found], as: UTF8.self)
        }
        if let unescaped, let found = firstNotFragment("url(", in: unescaped, quoted: false) {
            return String(decoding: unescaped[found], as: UTF8.self)
        }
        return nil
    }

    /// Where in `text` (the first 200 bytes of) the first value of `marker` that is not a fragment lies: `href`'s
    /// quoted value (`quoted`; any prefix, `xlink:href`), or what `url(` holds, after spaces and quotes.
    private func firstNotFragment(_ marker: String, in text: [UInt8], quoted: Bool) -> Range<Int>? {
        let closers = quoted ? Array("\"'".utf8) : Array(")".utf8)
        var start = text.startIndex
        while let found = text[start...].firstRange(of: Array(marker.utf8)) {
            start = found.upperBound
            var index = found.upperBound
            if quoted {
                guard let (valueStart, _) = Self.quotedValue(in: text, after: index) else { continue }
                index = valueStart
            } else {
                while index < text.endIndex,
                    text[index] == 0x20 || text[index] == UInt8(ascii: "\"") || text[index] == UInt8(ascii: "'")
                {
                    index += 1
                }
            }
            let value = text[index...].prefix {
                !closers.contains($0) && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "'")
            }
            if value.drop(while: Self.isSpace).first == UInt8(ascii: "#") { continue }
            return index..<(index + min(value.count, 200))
        }
        return nil
    }

    /// `document` as librsvg's CSS parser reads it, in ASCII lowercase: XML's character references (`&#117;`,
    /// `&#x75;`) and predefined entities expanded (the XML parser does it in attribute values and text), then CSS's
    /// escapes (CSS Syntax 3: a backslash and up to six hex digits, with one white space after them, is that code
    /// point; a backslash and a line break, nothing; a backslash and any other character, that character). A code
    /// point outside ASCII becomes one byte 0x80: no keyword searched for holds one. Expanding everywhere, not only in
    /// CSS, may find what the renderer would not: the search only refuses more.
    static func unescaping(_ document: [UInt8]) -> [UInt8] {
        var xml: [UInt8] = []
        xml.reserveCapacity(document.count)
        var index = 0
        while index < document.count {
            if document[index] == UInt8(ascii: "&"), let (scalar, end) = reference(in: document, at: index) {
                xml.append(scalar < 0x80 ? UInt8(scalar) : 0x80)
                index = end
            } else {
                xml.append(document[index])
                index += 1
            }
        }
        var css: [UInt8] = []
        css.reserveCapacity(xml.count)
        index = 0
        while index < xml.count {
            let byte = xml[index]
            index += 1
            guard byte == UInt8(ascii: "\\") else {
                css.append(lowercased(byte))
                continue
            }
            guard index < xml.count else { break }
            var scalar: UInt32 = 0
            var digits = 0
            while digits < 6, index < xml.count, let digit = hexValue(xml[index], lowercaseOnly: false) {
                scalar = scalar << 4 | UInt32(digit)
                digits += 1
                index += 1
            }
            if digits > 0 {
                // One white space ends the escape (a CR LF counts as one).
                if index < xml.count, isSpace(xml[index]) || xml[index] == 0x0C {
                    index += xml[index] == 0x0D && index + 1 < xml.count && xml[index + 1] == 0x0A ? 2 : 1
                }
                css.append(scalar < 0x80 && scalar > 0 ? lowercased(UInt8(scalar)) : 0x80)
            } else if xml[index] == 0x0A || xml[index] == 0x0D || xml[index] == 0x0C {
                index += xml[index] == 0x0D && index + 1 < xml.count && xml[index + 1] == 0x0A ? 2 : 1
            } else {
                css.append(lowercased(xml[index]))
                index += 1
            }
        }
        return css
    }

    /// The code point an XML reference starting at `start` (its `&`) stands for, and where it ends; nil when none
    /// does (another entity needs a DTD, which is refused before).
    private static func reference(in bytes: [UInt8], at start: Int) -> (UInt32, Int)? {
        let body = bytes[(start + 1)...].prefix(12)
        guard let semicolon = body.firstIndex(of: UInt8(ascii: ";")) else { return nil }
        let name = bytes[(start + 1)..<semicolon]
        let end = semicolon + 1
        switch Array(name) {
        case Array("lt".utf8): return (0x3C, end)
        case Array("gt".utf8): return (0x3E, end)
        case Array("amp".utf8): return (0x26, end)
        case Array("quot".utf8): return (0x22, end)
        case Array("apos".utf8): return (0x27, end)
        default: break
        }
        guard name.first == UInt8(ascii: "#"), name.count > 1 else { return nil }
        let hex = name.dropFirst().first.map { $0 | 0x20 } == UInt8(ascii: "x")
        let digits = name.dropFirst(hex ? 2 : 1)
        guard !digits.isEmpty else { return nil }
        var value: UInt32 = 0
        for byte in digits {
            let digit: UInt32
            if hex {
                guard let found = hexValue(byte, lowercaseOnly: false) else { return nil }
                digit = UInt32(found)
            } else {
                guard (0x30...0x39).contains(byte) else { return nil }
                digit = UInt32(byte - 0x30)
            }
            value = min(value * (hex ? 16 : 10) + digit, 0x11_0000)
        }
        return (value, end)
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }

    /// Where the value of the attribute whose name ends at `index` starts (after spaces, `=`, spaces and a quote),
    /// and its quote; nil when no `=` and quote follow (the name was text, not an attribute).
    private func quotedValue(after index: Int) -> (start: Int, quote: UInt8)? {
        Self.quotedValue(in: text, after: index)
    }

    private static func quotedValue(in text: [UInt8], after index: Int) -> (start: Int, quote: UInt8)? {
        var index = index
        while index < text.endIndex, Self.isSpace(text[index]) { index += 1 }
        guard index < text.endIndex, text[index] == UInt8(ascii: "=") else { return nil }
        index += 1
        while index < text.endIndex, Self.isSpace(text[index]) { index += 1 }
        guard index < text.endIndex, text[index] == UInt8(ascii: "\"") || text[index] == UInt8(ascii: "'") else {
            return nil
        }
        return (index + 1, text[index])
    }

    /// XML's white space: space, tab, line feed, carriage return.
    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
}
