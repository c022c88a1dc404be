/// Where the parser puts a declared argument's value, and how often the command read it: a command must read
/// every option it declares (a test checks it), so that its help lists nothing it ignores.
///
/// A reference, shared by the copies of its property wrapper: `Mirror` hands out copies, and the parser binds
/// through them. Not `Sendable`: a command is parsed and planned on one task; what it plans is sent on.
final class Slot<Value> {
    private var value: Value?
    /// Whether the command line gave it (a default was not used).
    private(set) var isGiven = false
    /// How many times the command read it.
    private(set) var reads = 0

    /// A slot holding `value`, the default; nil for an argument that must be given.
    init(_ value: Value?) { self.value = value }

    /// Sets the value the command line gave.
    func give(_ value: Value) {
        self.value = value
        isGiven = true
    }

    /// The value; bound before any command reads it (a required one that was not given stopped the parse).
    func read() -> Value {
        reads += 1
        return value!
    }

    /// Whether the command line gave it, as a read.
    func readIsGiven() -> Bool {
        reads += 1
        return isGiven
    }
}
