/// What `Option`, `Flag`, `Argument` and `OptionGroup` have in common: found by `Mirror` among a command's
/// properties, they say what they declare and take their values from the command line.
protocol DeclaredArgument {
    /// What it declares, in order (a group: its members').
    var declarations: [ArgumentDeclaration] { get }
    /// Takes its value from `words`; `command` names the command in messages.
    /// - Throws: `UsageError` when a value is not one it accepts, or a required option is missing.
    func bind(_ words: CommandLineWords, command: String) throws(UsageError)
    /// The names of what it declares that the command never read.
    var unread: [String] { get }
}
