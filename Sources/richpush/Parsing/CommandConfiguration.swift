/// What a command says of itself beyond its arguments: its name, a one-line abstract (its help's overview and its
/// line in `richpush --help`), and a discussion after its options.
struct CommandConfiguration: Sendable {
    let name: String
    let abstract: String
    let discussion: String

    init(name: String, abstract: String, discussion: String = "") {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
    }
}
