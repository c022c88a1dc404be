/// Finds what in an SVG document would make a renderer reach outside it. librsvg (Debian 12's 2.54), given the
/// document from memory with no base location, still opened an absolute `file://` image reference (seen in a
/// test: it blocked on a FIFO), so RichPush does not rely on the renderer's policy: a document with any such
/// reference is refused before rendering.
///
/// Conservative, on the raw bytes: any `href` whose value is not a fragment (`#id`) or a `data:` URI, any CSS
/// `url(...)` of the same kind, any `@import`, and any DTD (`<!DOCTYPE` with an internal subset or an external
/// identifier, `<!ENTITY`). Case is ignored; entity and character escapes in attribute names are not expanded
/// by SVG renderers, so they cannot hide an `href`.
enum SVGReferences {
    /// The first external reference in `document`, as written, or nil when there is none.
    static func firstExternal(in document: [UInt8]) -> String? {
        let text = document.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }  // ASCII lowercase
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
                    // `href` (any prefix, `xlink:href`) then spaces, `=`, spaces and a quote.
                    while index < text.endIndex, text[index] == 0x20 || text[index] == 0x09 || text[index] == 0x0A {
                        index += 1
                    }
                    guard index < text.endIndex, text[index] == UInt8(ascii: "=") else { continue }
                    index += 1
                    while index < text.endIndex, text[index] == 0x20 || text[index] == 0x09 || text[index] == 0x0A {
                        index += 1
                    }
                    guard index < text.endIndex, closers.contains(text[index]) else { continue }
                    index += 1
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
                let trimmed = value.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
                if trimmed.first == UInt8(ascii: "#") || trimmed.starts(with: Array("data:".utf8)) { continue }
                return String(decoding: document[index..<(index + min(value.count, 200))], as: UTF8.self)
            }
        }
        return nil
    }
}
