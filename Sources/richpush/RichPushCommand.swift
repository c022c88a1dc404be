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

    /// Refuses an argument whose bytes are not UTF-8: `CommandLine.arguments` replaces such bytes with U+FFFD, so a
    /// path given that way named another file (`gc` removed nothing from `root\xFF` and said so, exit 0; `enrich`
    /// made and wrote `att\u{FFFD}`; an input file was "not found").
    static func checkEncoding() throws(UsageError) {
        for index in 1..<Int(CommandLine.argc) {
            guard let argument = CommandLine.unsafeArgv[index] else { continue }
            let bytes = UnsafeBufferPointer(start: argument, count: strlen(argument)).map { UInt8(bitPattern: $0) }
            guard String(validating: bytes, as: UTF8.self) == nil else { continue }
            // Shown byte by byte past ASCII: the bytes that are not UTF-8 are the point.
            let shown = bytes.map { (0x20..<0x7F).contains($0) ? String(UnicodeScalar($0)) : "\\x" + $0.hexDigits }
            throw UsageError(
                "argument \(index) ('\(shown.joined())') is not UTF-8: richpush takes its arguments, paths among "
                    + "them, as UTF-8 (rename the file, or reach it through a link with a UTF-8 name)")
        }
    }

    static func main() async {
        // The SVG renderer's child (`--svg-renderer-child`, which the engine gives its own binary): before anything
        // else, so that a conversion pays for no more start-up than the binary's and libvips's. It ends the process.
        SVGRendererChild.runIfAsked(CommandLine.arguments, converter: VipsConverter())
        Output.claimStandardDescriptors()
        // A reader that goes away must not kill us mid-write: writes then fail with EPIPE instead.
        signal(SIGPIPE, SIG_IGN)
        // A file size limit (ulimit -f) must end one attachment with store-failed, not the process.
        signal(SIGXFSZ, SIG_IGN)
        var arguments = Array(CommandLine.arguments.dropFirst())
        let status: Int32
        do throws(UsageError) {
            try Self.checkEncoding()
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
