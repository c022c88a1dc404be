/// Options declared together in a type of their own and used by several commands, as argument-parser's
/// `@OptionGroup`: help lists them where the group stands among the command's properties.
@propertyWrapper
struct OptionGroup<Group: ParsableArguments>: DeclaredArgument {
    let wrappedValue: Group

    init() { wrappedValue = Group() }

    /// A group whose options were made with defaults of this command's own (`preflight`'s longer deadline).
    init(_ group: Group) { wrappedValue = group }

    var declarations: [ArgumentDeclaration] { wrappedValue.declarations }

    var unread: [String] { wrappedValue.declaredArguments.flatMap(\.unread) }

    func bind(_ words: CommandLineWords, command: String) throws(UsageError) {
        for argument in wrappedValue.declaredArguments { try argument.bind(words, command: command) }
    }
}
