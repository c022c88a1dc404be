import RichPush
import RichPushTransform

#if canImport(Glibc)
    import Glibc
#endif

/// `richpush`: the top-level command, dispatching to its subcommands.
@main
enum RichPushCommand {
    static let abstract = """
        RichPush attaches the media of push payloads: it finds every vendor's media reference, fetches each with \
        libcurl under a deadline, types it by its bytes with libmagic, and stores what iOS accepts.
        """

    /// The subcommands, in the order the overview lists them: dispatch, `help <subcommand>` and the overview come
    /// from this list and each command's declaration.
    static var subcommands: [any ParsableCommand.Type] {
        [
            EnrichCommand.self, StreamCommand.self, ExplainCommand.self, PreflightCommand.self, RenderCommand.self,
            GCCommand.self,
            ServeCommand.self, WorkerCommand.self,
        ]
    }

    /// `richpush --help`.
    static var overview: String {
        HelpText.overview(abstract: abstract, subcommands: subcommands.map { $0.configuration })
    }

    static func main() async {
        // The SVG renderer's child (`--svg-renderer-child`, which the engine gives its own binary): before anything
        // else, so that a conversion pays for no more start-up than the binary's and libvips's. It ends the process.
        SVGRendererChild.runIfAsked(CommandLine.arguments, converter: VipsConverter())
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
            if let command = subcommands.first(where: { $0.configuration.name == first }) {
                status = try await command.main(arguments)
            } else {
                switch first {
                case "--version":
                    Output.write(Array("\(RichPushVersion.current)\n".utf8))
                case "--help", "-h":
                    Output.write(Array(overview.utf8))
                case "help":
                    let name = arguments.first
                    let command = subcommands.first { $0.configuration.name == name }
                    Output.write(Array((command?.help ?? overview).utf8))
                default:
                    throw UsageError("unknown subcommand '\(first)' (see 'richpush --help')")
                }
                status = 0
            }
        } catch {
            Output.error("error: \(error.detail)")
            exit(64)
        }
        exit(status)
    }
}
