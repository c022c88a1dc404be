import RichPush

/// `--drain-timeout`, declared once for the three long-running modes (`stream`, `serve`, `worker`), which drain the
/// same way (`ServiceRunner`): it means the same in each.
struct DrainOptions: ParsableArguments {
    @Option(
        "drain-timeout", .seconds(in: DrainOptions.range),
        help: "On SIGTERM/SIGINT, how long the work in flight may take to finish; then it is cancelled.")
    var timeout: Duration = ServiceRunner.defaultDrainTimeout

    /// Up to an hour; 0 cancels the work in flight at once.
    static let range: ClosedRange<Duration> = .zero ... .seconds(3600)
}
