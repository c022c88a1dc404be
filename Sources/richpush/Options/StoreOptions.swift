import RichPush

/// `--attachments-dir`: the commands that store attachments, and `gc`, which removes them.
struct StoreOptions: ParsableArguments {
    @Option(
        "attachments-dir", .text("dir"), help: "The root of the attachment directories.", default: "$TMPDIR/richpush",
        field: "store.root")
    var directory: String?

    /// The root given, made absolute (attachment paths handed back are absolute); nil for the library's default.
    func root() throws(UsageError) -> String? {
        guard let directory else { return nil }
        guard !directory.isEmpty else { throw UsageError("\($directory.flag): the path is empty") }
        return directory.hasPrefix("/") ? directory : FileSystem.currentDirectory() + "/" + directory
    }
}
