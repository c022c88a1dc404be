import RichPush

/// `--attachments-dir`: the commands that store attachments, and `gc`, which removes them.
struct StoreOptions: ParsableArguments {
    @Option(
        "attachments-dir", .text("dir"), help: "The root of the attachment directories.",
        default: "$TMPDIR/richpush-<uid>",
        field: StoreOptions.field)
    var directory: String?

    /// The configuration field `--attachments-dir` sets.
    static let field = "store.root"

    /// Said after a refused root: which option chooses another (the default is per user, but a root given, or a
    /// TMPDIR shared, can still be another user's).
    static var hint: String { "(choose another root with \(StoreOptions().$directory.flag) DIR)" }

    /// The root given, made absolute (attachment paths handed back are absolute); nil for the library's default.
    func root() throws(UsageError) -> String? {
        guard let directory else { return nil }
        guard !directory.isEmpty else { throw UsageError("\($directory.flag): the path is empty") }
        return directory.hasPrefix("/") ? directory : FileSystem.currentDirectory() + "/" + directory
    }
}
