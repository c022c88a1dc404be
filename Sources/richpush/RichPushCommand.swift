#if canImport(Glibc)
    import Glibc
#endif
import RichPush

/// `richpush`: the top-level command, dispatching to its subcommands.
@main
enum RichPushCommand {
    static let overview = """
        OVERVIEW: RichPush attaches the media of push payloads: it finds every vendor's media reference, fetches
        each with libcurl under a deadline, types it by its bytes with libmagic, and stores what iOS accepts.

        USAGE: richpush <subcommand>

        OPTIONS:
          --version                 Show the version.
          -h, --help                Show help information.

        SUBCOMMANDS:
          enrich                    Attach the media of push payload files; print one JSON result per input.
          stream                    Attach the media of NDJSON payloads on standard input, in order.
          explain                   Tell why each payload would, or would not, get its attachments.
          render                    Expand a template notification (Azure Notification Hubs) into a payload.
          gc                        Remove attachment directories older than a given age.
          serve                     Serve the engine over HTTP (enrich, explain, attachments, health, metrics).
          worker                    Consume payload entries from a Redis stream; write one result entry each.

          See 'richpush help <subcommand>' for detailed help.

        """

    static func main() async {
        // A reader that goes away must not kill us mid-write: writes then fail with EPIPE instead.
        signal(SIGPIPE, SIG_IGN)
        // A file size limit (ulimit -f) must end one attachment with store-failed, not the process.
        signal(SIGXFSZ, SIG_IGN)
        var arguments = Array(CommandLine.arguments.dropFirst())
        let status: Int32
        do throws(UsageError) {
            guard let first = arguments.first else {
                Output.write(Array(overview.utf8))
                exit(0)
            }
            arguments.removeFirst()
            switch first {
            case "enrich": status = try await EnrichCommand.run(arguments)
            case "stream": status = try await StreamCommand.run(arguments)
            case "gc": status = try GCCommand.run(arguments)
            case "serve": status = try await ServeCommand.run(arguments)
            case "worker": status = try await WorkerCommand.run(arguments)
            case "explain": status = try await ExplainCommand.run(arguments)
            case "render": status = try RenderCommand.run(arguments)
            case "--version": Output.write(Array("\(RichPushVersion.current)\n".utf8)); status = 0
            case "--help", "-h": Output.write(Array(overview.utf8)); status = 0
            case "help":
                let specs = [EnrichCommand.spec, StreamCommand.spec, ExplainCommand.spec, RenderCommand.spec, GCCommand.spec, ServeCommand.spec, WorkerCommand.spec]
                if let name = arguments.first, let spec = specs.first(where: { $0.name == name }) {
                    Output.write(Array(spec.help.utf8))
                } else {
                    Output.write(Array(overview.utf8))
                }
                status = 0
            default:
                throw UsageError("unknown subcommand '\(first)' (see 'richpush --help')")
            }
        } catch {
            Output.error("error: \(error.message)")
            exit(64)
        }
        exit(status)
    }
}
