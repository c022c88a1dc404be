import RichPush

/// `richpush gc`: removes old attachment directories.
struct GCCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        name: "gc",
        abstract: "Remove attachment directories older than a given age.",
        discussion: """
            Only directories named as RichPush names them (a UUID) are removed, by descriptors: a symbolic link is
            removed, never followed, and nothing on another file system is entered. Prints how many. EXIT STATUS:
            0; 64 on a usage error; 70 when the root is refused (a symbolic link, another user's, writable by group
            or others) or cannot be read.
            """)

    @Option(
        "older-than", .seconds(in: GCCommand.ageRange), help: "Remove directories last changed longer ago than this.")
    var age: Duration

    @OptionGroup var store: StoreOptions

    /// `--older-than`: up to a hundred years, older than any file this machine holds; 0 takes everything.
    static let ageRange: ClosedRange<Duration> = .zero ... .seconds(3_153_600_000)

    struct Plan: Sendable {
        /// The root as given (not made absolute: the line printed names it so).
        let root: String
        let age: Duration
    }

    func plan() throws(UsageError) -> Plan {
        Plan(root: store.directory ?? AttachmentStore.defaultRoot, age: age)
    }

    static func run(_ plan: Plan) async -> Int32 {
        do {
            let removed = try AttachmentStore(root: plan.root).collectGarbage(olderThan: plan.age)
            Output.write(Array("removed \(removed) attachment directories from \(plan.root)\n".utf8))
            return 0
        } catch {
            // As enrich, stream and explain exit when the root is refused (see withEnricher).
            Output.error("richpush gc: \(error.detail) \(StoreOptions.hint)")
            return 70
        }
    }
}
