/// The payload files `enrich` and `explain` read, one payload each.
struct PayloadFiles: ParsableArguments {
    @Argument("<file>", help: "A payload JSON file; '-' or none reads one payload from standard input.")
    var files: [String]

    /// The inputs in order: the files named, or `-` (standard input) when none is.
    var inputs: [String] { files.isEmpty ? ["-"] : files }
}
