/// A subcommand of `richpush`, in swift-argument-parser's shape: its properties declare its arguments, and its
/// help, usage and line in the overview derive from them and from `configuration`.
///
/// It runs in two steps. `plan()` reads every option it declares and turns them into what the command will do,
/// refusing a mistake as a usage error (exit 64) before anything starts; `run` does it. A test plans every command
/// and checks that none declares an option it does not read.
protocol ParsableCommand: ParsableArguments, SendableMetatype {
    /// What the options say, checked: everything `run` needs.
    associatedtype Plan: Sendable

    static var configuration: CommandConfiguration { get }

    /// Reads the options and checks them together.
    /// - Throws: `UsageError` naming the option that is wrong.
    func plan() throws(UsageError) -> Plan

    /// Does what `plan` says; the process's exit status.
    static func run(_ plan: Plan) async -> Int32

    /// Told the words it was parsed from, once bound (for a command that reads its own options again later, as
    /// `serve --tenants` does for each tenant). By default, ignored.
    func parsed(from arguments: [String])
}

extension ParsableCommand {
    func parsed(from arguments: [String]) {}
}

extension ParsableCommand {
    /// Parses `arguments` (those after the subcommand's name); nil when they asked for help, which is then printed.
    /// - Throws: `UsageError` for an unknown option, a missing or malformed value, a value out of range.
    static func parse(_ arguments: [String]) throws(UsageError) -> Self? {
        let command = Self()
        let name = configuration.name
        let declarations = Self.declarations
        let words = try CommandLineWords(arguments, declarations: declarations, command: name)
        if words.help {
            Output.write(Array(help.utf8))
            return nil
        }
        let takesPositionals = declarations.contains { if case .positional = $0.kind { true } else { false } }
        if !takesPositionals, let first = words.positionals.first {
            throw UsageError("\(name): unexpected argument '\(first)'")
        }
        for argument in command.declaredArguments { try argument.bind(words, command: name) }
        command.parsed(from: arguments)
        return command
    }

    /// Parses, plans and runs the command; its exit status.
    static func main(_ arguments: [String]) async throws(UsageError) -> Int32 {
        guard let command = try parse(arguments) else { return 0 }
        return await run(try command.plan())
    }

    /// `richpush <name> ...`: what must be given, `[<options>]` for the rest, then the positional arguments.
    static var usage: String {
        let declarations = Self.declarations
        var words = ["richpush", configuration.name]
        for declaration in declarations {
            if case .required = declaration.requirement { words.append(declaration.synopsis) }
        }
        if declarations.contains(where: { declaration in
            if case .defaultValue = declaration.requirement, declaration.kind.isNamed { return true }
            return false
        }) {
            words.append("[<options>]")
        }
        for declaration in declarations where !declaration.kind.isNamed { words.append("[\(declaration.synopsis)]") }
        return words.joined(separator: " ")
    }

    /// The `--help` text.
    static var help: String {
        HelpText.command(configuration, usage: usage, declarations: Self.declarations)
    }
}
