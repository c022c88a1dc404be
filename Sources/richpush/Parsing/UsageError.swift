/// A command-line mistake: the message names the argument; the exit code is 64 (EX_USAGE).
struct UsageError: Error, CustomStringConvertible {
    /// What is wrong, naming the argument.
    let detail: String
    init(_ detail: String) { self.detail = detail }
    var description: String { detail }
}
