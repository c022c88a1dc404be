/// Finds what in an SVG document would make a renderer reach outside it. librsvg (Debian 12's 2.54), given the
/// document from memory with no base location, still opened an absolute `file://` image reference (seen in a
/// test: it blocked on a FIFO), so RichPush does not rely on the renderer's policy: a document with any such
/// reference is refused before rendering.
///
/// Conservative, on the raw bytes: any `href` whose value is not a fragment (`#id`), any CSS `url(...)` of the same
/// kind, any `@import`, and any DTD (`<!DOCTYPE` with an internal subset or an external identifier, `<!ENTITY`).
/// Case is ignored; entity and character escapes in attribute names are not expanded by SVG renderers, so they
/// cannot hide an `href`. A `data:` URI is refused too: librsvg hands an embedded image to gdk-pixbuf, whose
/// loaders (XPM, PNM, TGA, ICO, ANI, ...) would read bytes libmagic never judged, at a size `maximumPixels` never
/// saw (a 10 x 10 document holding a 20,000 x 20,000 PNG took 2.8 GB).
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

    init(_ document: [UInt8]) {
        self.document = document
        text = document.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
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

    /// The first external reference, as written, or nil when there is none.
    var firstExternal: String? {
        for marker in ["<!entity", "@import"] where text.firstRange(of: Array(marker.utf8)) != nil {
            return marker
        }
        if let doctype = text.firstRange(of: Array("<!doctype".utf8)) {
            let rest = text[doctype.upperBound...].prefix { $0 != UInt8(ascii: ">") }
            if rest.contains(UInt8(ascii: "[")) || rest.firstRange(of: Array("system".utf8)) != nil
                || rest.firstRange(of: Array("public".utf8)) != nil
            {
                return "<!DOCTYPE" + String(decoding: rest.prefix(80), as: UTF8.self)
            }
        }
        for (marker, closers) in [("href", Array("\"'".utf8)), ("url(", Array(")".utf8))] {
            var start = text.startIndex
            while let found = text[start...].firstRange(of: Array(marker.utf8)) {
                start = found.upperBound
                var index = found.upperBound
                if marker == "href" {
                    // `href` (any prefix, `xlink:href`) then its quoted value.
                    guard let (valueStart, _) = quotedValue(after: index) else { continue }
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
                return String(decoding: document[index..<(index + min(value.count, 200))], as: UTF8.self)
            }
        }
        return nil
    }

    /// Where the value of the attribute whose name ends at `index` starts (after spaces, `=`, spaces and a quote),
    /// and its quote; nil when no `=` and quote follow (the name was text, not an attribute).
    private func quotedValue(after index: Int) -> (start: Int, quote: UInt8)? {
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
