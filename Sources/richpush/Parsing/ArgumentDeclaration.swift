/// One argument of a command as help shows it and the parser knows it: an option, a flag or the positional
/// arguments.
struct ArgumentDeclaration {
    enum Kind {
        /// `--name <placeholder>`.
        case option(placeholder: String)
        /// `--name`, on or off.
        case flag
        /// The words that are not options (`<file> ...`).
        case positional

        /// Whether it is given by name (an option or a flag), not by position.
        var isNamed: Bool {
            if case .positional = self { return false }
            return true
        }
    }

    /// What help shows in parentheses after the help text: a default, or that it must be given.
    enum Requirement {
        case required
        case defaultValue(String)
    }

    /// The long name without dashes (`deadline`), or a positional's placeholder (`<file>`).
    let name: String
    let kind: Kind
    let help: String
    /// The accepted values (`from 1 to 10000`), or nil.
    let range: String?
    let requirement: Requirement
    /// Whether it may be given more than once.
    let repeatable: Bool
    /// The `Enricher.Configuration` field it sets (`network.resolve`), so that the library's validation error names the
    /// option; nil for none.
    let field: String?

    /// The placeholder of its value (`seconds`); nil for a flag or the positional arguments.
    var placeholder: String? {
        if case .option(let placeholder) = kind { return placeholder }
        return nil
    }

    /// As help's left column and usage write it: `--deadline <seconds>`, `--allow-http`, `<file> ...`.
    var synopsis: String {
        switch kind {
        case .option(let placeholder): "--\(name) <\(placeholder)>"
        case .flag: "--\(name)"
        case .positional: "\(name) ..."
        }
    }

    /// The help text with its parenthesis: `... (from 1 to 10000; default: 32)`, `... (repeatable; default: none)`,
    /// `... (required)`.
    var fullHelp: String {
        var notes: [String] = []
        if let range { notes.append(range) }
        if repeatable { notes.append("repeatable") }
        switch requirement {
        case .required: notes.append("required")
        case .defaultValue(let text): notes.append("default: \(text)")
        }
        guard case .positional = kind else { return "\(help) (\(notes.joined(separator: "; ")))" }
        return help
    }
}
