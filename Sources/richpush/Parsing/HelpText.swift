/// Help as argument-parser lays it out, from a command's declarations: an overview, the usage, the arguments and
/// options in two columns, then the discussion; text wrapped at `width` columns.
enum HelpText {
    /// The width text is wrapped to, as argument-parser's when the output is not a terminal.
    static let width = 80
    /// Where the right-hand column starts.
    static let column = 28

    /// A subcommand's `--help`.
    static func command(_ configuration: CommandConfiguration, usage: String, declarations: [ArgumentDeclaration])
        -> String
    {
        var text = wrap("OVERVIEW: " + configuration.abstract, indent: 0) + "\n" + wrap("USAGE: " + usage, indent: 2)
        let positionals = declarations.filter { !$0.kind.isNamed }
        if !positionals.isEmpty {
            text += "\nARGUMENTS:\n"
            for declaration in positionals { text += row(declaration.name, declaration.fullHelp) }
        }
        text += "\nOPTIONS:\n"
        for declaration in declarations where declaration.kind.isNamed {
            text += row(declaration.synopsis, declaration.fullHelp)
        }
        text += row("-h, --help", "Show help information.")
        if !configuration.discussion.isEmpty { text += "\n" + paragraphs(configuration.discussion) }
        return text
    }

    /// `richpush --help`: the root's abstract, its own options, and a line for each subcommand.
    static func overview(abstract: String, subcommands: [CommandConfiguration]) -> String {
        var text = wrap("OVERVIEW: " + abstract, indent: 0) + "\nUSAGE: richpush <subcommand>\n\nOPTIONS:\n"
        text += row("--version", "Show the version.") + row("-h, --help", "Show help information.")
        text += "\nSUBCOMMANDS:\n"
        for subcommand in subcommands { text += row(subcommand.name, subcommand.abstract) }
        return text + "\n  See 'richpush help <subcommand>' for detailed help.\n"
    }

    /// One row of two columns: `left` from column 2, `help` from `column` (on the next line when `left` reaches it),
    /// wrapped.
    static func row(_ left: String, _ help: String) -> String {
        let head = "  " + left
        let body = wrap(String(repeating: " ", count: column) + help, indent: column)
        guard head.count < column else { return head + "\n" + body }
        return head + body.dropFirst(head.count)
    }

    /// Blank-line separated paragraphs, each reflowed.
    static func paragraphs(_ text: String) -> String {
        var paragraphs: [[Substring]] = [[]]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty { paragraphs.append([]) } else { paragraphs[paragraphs.count - 1].append(line) }
        }
        return paragraphs.filter { !$0.isEmpty }.map { wrap($0.joined(separator: " "), indent: 0) }
            .joined(separator: "\n")
    }

    /// `text` wrapped at spaces to `width` columns, continuation lines indented by `indent`; a word longer than a
    /// line stays whole. Ends with a newline.
    static func wrap(_ text: String, indent: Int) -> String {
        let leading = text.prefix { $0 == " " }
        var lines: [String] = []
        var line = String(leading)
        var lineHasWord = false
        for word in text.dropFirst(leading.count).split(separator: " ") {
            if lineHasWord, line.count + 1 + word.count > width {
                lines.append(line)
                line = String(repeating: " ", count: indent)
                lineHasWord = false
            }
            line += (lineHasWord ? " " : "") + word
            lineHasWord = true
        }
        lines.append(line)
        return lines.joined(separator: "\n") + "\n"
    }
}
