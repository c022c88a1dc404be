/// Text from a payload, an origin or a store, made safe to print or log. The text outputs (`explain`, `preflight`)
/// print what a stranger's payload holds, and a key holding "\n  fake line: would attach", an escape sequence
/// (clearing the screen, setting the window's title) or a right-to-left override would forge or hide what the
/// operator reads; a store's words go into details and logs; a label value into `/metrics`, line by line. The JSON
/// outputs escape all of it already.
package enum TerminalText {
    /// `line` with each control character (`isControl`), line or paragraph separator, and bidirectional control
    /// written as a visible escape, `\u{1B}`: what was one line stays one line, and shows what was there.
    package static func printable(_ line: String) -> String {
        guard line.unicodeScalars.contains(where: isEscaped) else { return line }
        var text = String.UnicodeScalarView()
        for scalar in line.unicodeScalars {
            if isEscaped(scalar) {
                text.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                text.append(scalar)
            }
        }
        return String(text)
    }

    /// `text` with each control character (`isControl`: line breaks, escape sequences) as U+FFFD.
    package static func withoutControls(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars { scalars.append(isControl(scalar) ? "\u{FFFD}" : scalar) }
        return String(scalars)
    }

    /// Whether `scalar` is a control character: C0 (line breaks and tabs included), DEL or C1.
    package static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// What `printable` escapes: control characters, line and paragraph separators, bidirectional controls.
    private static func isEscaped(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: true
        default: isControl(scalar)
        }
    }
}
