/// The positional arguments of a command: every word that is not an option, in order (`<file> ...`). A command
/// that declares none refuses them.
@propertyWrapper
struct Argument: DeclaredArgument {
    private let declaration: ArgumentDeclaration
    private let slot = Slot<[String]>([])

    /// `name` is the placeholder help shows (`<file>`).
    init(_ name: String, help: String) {
        declaration = ArgumentDeclaration(
            name: name, kind: .positional, help: help, range: nil, requirement: .defaultValue("none"),
            repeatable: true, field: nil)
    }

    var wrappedValue: [String] { slot.read() }

    var declarations: [ArgumentDeclaration] { [declaration] }

    var unread: [String] { slot.reads == 0 ? [declaration.name] : [] }

    func bind(_ words: CommandLineWords, command: String) throws(UsageError) {
        slot.give(words.positionals)
    }
}
