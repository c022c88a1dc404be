/// A command-line mistake: the message names the argument; the exit code is 64 (EX_USAGE).
struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
