/// A flag, `--name`: off unless given.
@propertyWrapper
struct Flag: DeclaredArgument, NamedOption {
    private let declaration: ArgumentDeclaration
    private let slot = Slot(false)

    init(_ name: String, help: String, field: String? = nil) {
        declaration = ArgumentDeclaration(
            name: name, kind: .flag, help: help, range: nil, requirement: .defaultValue("off"), repeatable: false,
            field: field)
    }

    var wrappedValue: Bool { slot.read() }

    /// The flag itself: `$stripMetadata.isGiven`.
    var projectedValue: Self { self }

    var isGiven: Bool { slot.read() }

    var flag: String { "--" + declaration.name }

    var declarations: [ArgumentDeclaration] { [declaration] }

    var unread: [String] { slot.reads == 0 ? ["--" + declaration.name] : [] }

    func bind(_ words: CommandLineWords, command: String) throws(UsageError) {
        if words.flags.contains(declaration.name) { slot.give(true) }
    }
}
