import RichPush

/// `richpush gc`: removes old attachment directories.
struct GCCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        name: "gc",
        abstract: "Remove attachment directories older than a given age.",
        discussion: """
            Only directories named as RichPush names them (a UUID) are removed, by descriptors: a symbolic link is
            removed, never followed, and nothing on another file system is entered. Prints how many; names on
            standard error each old directory it could not remove whole, with the first thing left in it and why.
            A directory whose last change is over a minute ahead of the clock (set back since) is dated now instead,
            and said so on standard error: it is removed once --older-than has passed from now, not kept until the
            clock reaches its date.
            EXIT STATUS: 0; 1 when an old directory could not be removed whole (the others are removed), or one
            dated ahead of the clock could not be dated now (named as such); 64 on a usage error; 70 when the root is
            refused (a symbolic link, another user's, writable by group or others) or cannot be read.
            """)

    @Option(
        "older-than", .seconds(in: GCCommand.ageRange), help: "Remove directories last changed longer ago than this.")
    var age: Duration

    @OptionGroup var store: StoreOptions

    /// `--older-than`: up to a hundred years, older than any file this machine holds; 0 takes everything.
    static let ageRange: ClosedRange<Duration> = .zero ... .seconds(3_153_600_000)

    /// How many directories not removed whole are named, one line each; a count says how many more.
    static let shownLeftovers = 20

    struct Plan: Sendable {
        /// The root as given (not made absolute: the line printed names it so).
        let root: String
        let age: Duration
    }

    func plan() throws(UsageError) -> Plan {
        if store.directory == nil, let problem = AttachmentStore.defaultRootProblem {
            // As enrich refuses it: nothing of RichPush's is there.
            let root = AttachmentStore.defaultRoot
            throw UsageError(
                "\(store.$directory.flag): '\(TerminalText.printable(root))' is not an absolute path; \(problem)")
        }
        // An empty path is refused as enrich refuses it (`gc --attachments-dir "$ROOT"` with ROOT unset said it had
        // removed nothing, exit 0, for ever).
        if store.directory?.isEmpty == true { _ = try store.root() }
        return Plan(root: store.directory ?? AttachmentStore.defaultRoot, age: age)
    }

    static func run(_ plan: Plan) async -> Int32 {
        do {
            let collection = try AttachmentStore(root: plan.root).collectGarbage(olderThan: plan.age)
            let lost = StreamFailure(.output)
            _ = Output.writeResults(
                Array(
                    "removed \(collection.removed) attachment directories from \(TerminalText.printable(plan.root))\n"
                        .utf8), failure: lost)
            if collection.redated > 0 {
                Output.error(
                    "richpush gc: re-dated \(collection.redated) attachment directories whose last change was ahead of "
                        + "the clock (set back since?): each is removed once --older-than has passed from now")
            }
            if let status = lost.exitStatus() { return status }
            guard !collection.left.isEmpty else { return 0 }
            for leftover in collection.left.prefix(shownLeftovers) {
                // A name inside an attachment directory may hold a line break or an escape: one line each, as it is.
                Output.error("richpush gc: not removed whole: \(TerminalText.printable("\(leftover)"))")
            }
            if collection.left.count > shownLeftovers {
                Output.error("richpush gc: and \(collection.left.count - shownLeftovers) more not removed whole")
            }
            return 1
        } catch {
            // As enrich, stream and explain exit when the root is refused (see withEnricher).
            Output.error("richpush gc: \(TerminalText.printable(error.detail)) \(StoreOptions.hint)")
            return 70
        }
    }
}
