/// What a command line said, word by word, against a command's declarations: each option's values, the flags, the
/// positional words, and whether help was asked for. Values are still text; each option converts its own.
struct CommandLineWords {
    private(set) var values: [String: [String]] = [:]
    private(set) var flags: Set<String> = []
    private(set) var positionals: [String] = []
    /// `--help` or `-h` was given.
    private(set) var help = false

    /// Splits `arguments`: `--name value`, `--name=value`, `--flag`, `--` (the rest are positional), `-` (standard
    /// input, a positional), `-h`.
    /// - Throws: `UsageError` for an option `command` does not declare, a flag given a value, an option without
    ///   its value, or one given twice that is not repeatable.
    init(_ arguments: [String], declarations: [ArgumentDeclaration], command: String) throws(UsageError) {
        var remaining = arguments[...]
        var optionsEnded = false
        while let argument = remaining.popFirst() {
            if optionsEnded || !argument.hasPrefix("--") {
                if !optionsEnded, argument.hasPrefix("-"), argument != "-" {
                    guard argument == "-h" else {
                        throw UsageError("unknown option '\(argument)' (see 'richpush \(command) --help')")
                    }
                    help = true
                    continue
                }
                positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            var name = String(argument.dropFirst(2))
            var inline: String? = nil
            if let equals = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if name == "help" {
                help = true
                continue
            }
            guard let declaration = declarations.first(where: { $0.name == name && $0.kind.isNamed }) else {
                throw UsageError("unknown option '--\(name)' (see 'richpush \(command) --help')")
            }
            guard let placeholder = declaration.placeholder else {
                if inline != nil { throw UsageError("--\(name) takes no value") }
                flags.insert(name)
                continue
            }
            guard let value = inline ?? remaining.popFirst() else {
                throw UsageError("--\(name) needs a value <\(placeholder)>")
            }
            if !declaration.repeatable, values[name] != nil {
                throw UsageError("--\(name) was given twice")
            }
            values[name, default: []].append(value)
        }
    }
}
