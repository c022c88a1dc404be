/// Makes what libvips and the libraries beneath it said, or what an SVG document names, into a failure detail fit
/// for output: no file paths (ImageMagick echoed the local file an SVG named; libvips names the staged file, whose
/// path says where attachments are kept), no ImageMagick source locations, bounded in length.
enum FailureDetail {
    /// The longest detail kept, in characters.
    static let maximumLength = 400

    /// `clean` of the C string in `buffer` (a cvips error buffer).
    static func clean(_ buffer: [CChar]) -> String {
        clean(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// `message` with every absolute path (a `/` not preceded by a letter, digit or one of `._-/`) replaced by
    /// `<path>`, ImageMagick's ` @ error/file.c/Function/line` removed, and cut to `maximumLength`.
    static func clean(_ message: String) -> String {
        var text = message
        // ImageMagick ends its messages with where in its sources they came from.
        while let at = text.firstRange(of: " @ ") {
            let tail = text[at.upperBound...]
            let end = tail.firstIndex { $0 == ";" || $0 == "\n" } ?? text.endIndex
            text.removeSubrange(at.lowerBound..<end)
        }
        var cleaned = ""
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            let previous = cleaned.last
            let inWord = previous.map { $0.isLetter || $0.isNumber || "._-/~".contains($0) } ?? false
            if character == "/", !inWord {
                // A path runs to the next space or quote.
                cleaned += "<path>"
                index =
                    text[index...].firstIndex {
                        $0 == " " || $0 == "\"" || $0 == "'" || $0 == "`" || $0 == ";" || $0 == ")"
                    }
                    ?? text.endIndex
                continue
            }
            cleaned.append(character)
            index = text.index(after: index)
        }
        let trimmed = cleaned.trimmingSpaces
        return trimmed.count > maximumLength ? String(trimmed.prefix(maximumLength)) + "..." : trimmed
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var text = Substring(self)
        while let first = text.first, first.isWhitespace || first == ";" { text.removeFirst() }
        while let last = text.last, last.isWhitespace || last == ";" { text.removeLast() }
        return String(text)
    }
}
