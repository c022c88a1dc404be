/// An option or a flag as code that checks options together sees it: how it is written, and whether it was given.
protocol NamedOption {
    /// As written on the command line: `--deadline`.
    var flag: String { get }
    /// Whether the command line gave it (a read, as the value is).
    var isGiven: Bool { get }
}
