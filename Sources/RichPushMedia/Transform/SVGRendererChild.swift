internal import CSystem
import RichPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// The SVG renderer's child process (`TransformSettings.svgRenderer`): one SVG conversion, run by the converter the
/// executable gives it, bounded, its result reported to the parent that spawned it, and then the process ends.
///
/// An executable is a renderer when its `main` calls `runIfAsked` first thing: `richpush` does, so the CLI names
/// its own binary (`/proc/self/exe`). Checked before anything else in `main` (no argument parsing, no engine), the
/// child's start-up is the binary's dynamic linking and libvips's opening.
///
/// What it is given, as words after `flag` (`name=value`, readable in `ps`): the SVG's path, the output format,
/// its bound, the JPEG quality, its address-space, CPU and file-size limits, and the parent's id. The image is
/// written to descriptor 3, the parent's partial attachment file; the report (`Report`) to descriptor 4.
///
/// Before librsvg sees the document, the child bounds itself (core, address space, CPU, file size) and confines
/// itself (`confine`): a document that takes control of librsvg can then read what its uid reads and write to its
/// two descriptors, and little more (docs/security.md says what it can still do).
public enum SVGRendererChild {
    /// The first argument that makes an executable the renderer's child.
    public static let flag = "--svg-renderer-child"

    /// When `arguments` (the process's, argv[0] first) ask for the renderer's child, renders with `converter`,
    /// reports, and ends the process (`_exit`: nothing of the process is torn down, it only wrote to descriptors);
    /// otherwise returns at once.
    public static func runIfAsked(_ arguments: [String], converter: some ImageConverter) {
        guard arguments.count > 1, arguments[1] == flag else { return }
        _exit(run(Array(arguments.dropFirst(2)), converter: converter))
    }

    /// The child's work: bound and confine itself, convert, report. Its exit status: 0 when it reported (a success or
    /// a failure, including its own bounds'), 64 when its words are not a request, 70 when its parent was gone.
    static func run(_ words: [String], converter: some ImageConverter) -> Int32 {
        guard let request = Request(words: words) else {
            report(.failed(TransformFailure(.transformFailed, "the SVG renderer was started with \(words)")))
            return 64
        }
        // Ends with the parent (the thread that spawned it), so that a parent killed outright leaves no renderer.
        guard csystem_die_with_parent(request.parent) == 0 else { return 70 }
        // Its name in `ps` and `top`, which would otherwise be `exe`: the parent starts `/proc/self/exe`.
        nameThisThread(processName)
        // A write past RLIMIT_FSIZE then fails (EFBIG: store-failed, as in process) instead of killing the child
        // with no report; the parent's own disposition is inherited only where it ignores SIGXFSZ (the CLI does).
        signal(SIGXFSZ, SIG_IGN)
        if let failure = bound(request) ?? confine(converter, input: request.input) {
            report(.failed(failure))
            return 0
        }
        if request.probe {
            report(.failed(TransformFailure(.transformFailed, probe(request))))
            return 0
        }
        let output = ImageOutput(fileDescriptor: RendererProcess.outputDescriptor) { bytes throws(TransformFailure) in
            if let failed = FileSystem.writeAll(RendererProcess.outputDescriptor, bytes) {
                throw TransformFailure(.storeFailed, "write: \(RendererProcess.reason(failed))")
            }
        }
        let conversion = ConversionRequest(
            input: request.input, type: .svg, output: output, format: request.format,
            maximumSide: request.maximumSide, quality: request.quality, animated: false)
        do throws(TransformFailure) {
            report(.converted(try converter.convert(conversion, stop: StopSignal())))
        } catch {
            report(.failed(reachedFileSize(request) ?? error))
        }
        return 0
    }

    /// The failure to report when the output file has reached the file-size limit (the write past it failed with
    /// EFBIG, and libvips's own message says only that its write failed, or nothing after a long call), else nil.
    private static func reachedFileSize(_ request: Request) -> TransformFailure? {
        var information = stat()
        guard fstat(RendererProcess.outputDescriptor, &information) == 0, information.st_size >= request.fileSize
        else { return nil }
        return TransformFailure(
            .storeFailed,
            "write: \(RendererProcess.reason(EFBIG)): the rendered image reached the SVG renderer's file-size limit "
                + "of \(request.fileSize) bytes")
    }

    /// Sets the child's resource limits: no core dump (a renderer killed at its CPU limit would write one as large
    /// as its memory), its address space, CPU time and file size as the parent computed them. Nil, or why not.
    private static func bound(_ request: Request) -> TransformFailure? {
        for (limit, value, name) in [
            (CSYSTEM_LIMIT_CORE, 0, "RLIMIT_CORE"), (CSYSTEM_LIMIT_ADDRESS_SPACE, request.addressSpace, "RLIMIT_AS"),
            (CSYSTEM_LIMIT_CPU, request.cpuSeconds, "RLIMIT_CPU"),
            (CSYSTEM_LIMIT_FILE_SIZE, request.fileSize, "RLIMIT_FSIZE"),
        ] {
            // The CPU limit's hard value one second past the soft one: SIGXCPU, then SIGKILL if it is caught.
            let hard = limit == CSYSTEM_LIMIT_CPU ? value + 1 : value
            let failed = csystem_set_limit(limit, UInt64(value), UInt64(hard))
            if failed != 0 { return confinementFailure("setrlimit \(name)", failed) }
        }
        return nil
    }

    /// Confines the child before the document is parsed (`csystem_forbid_privileges`,
    /// `csystem_restrict_files_and_signals`, `csystem_restrict_reading`, `csystem_filter_system_calls`): a document
    /// that took control of librsvg can then read what rendering reads (libraries, fonts, fontconfig's files, the
    /// document) and write to the descriptors it was given, and little more (docs/security.md). The Landlock domains
    /// act on the calling thread and those it starts after, so they come while the child has one thread: the first
    /// before libvips starts, the read allow list after (`prepare`: libvips's libraries, fontconfig among them, are
    /// loaded, and fontconfig can be asked what it reads; libvips starts no thread before its first image); the
    /// seccomp filter reaches every thread (TSYNC) and comes after libvips has started, so that libvips's start runs
    /// as it always did and only the document's parsing and rendering meet it. Landlock missing from the kernel is
    /// no failure (the rest holds); anything else failing is, and the child converts nothing. Nil, or why not.
    private static func confine(_ converter: some ImageConverter, input: String) -> TransformFailure? {
        let forbidden = csystem_forbid_privileges()
        if forbidden != 0 { return confinementFailure("no_new_privs or capset", forbidden) }
        let restricted = csystem_restrict_files_and_signals()
        if restricted != 0, restricted != EOPNOTSUPP { return confinementFailure("Landlock", restricted) }
        converter.prepare()
        // After libvips has started (its libraries, and fontconfig's through them, are loaded: fontconfig can be
        // asked what it reads), while the child still has one thread.
        let reading = csystem_restrict_reading(input)
        if reading != 0, reading != EOPNOTSUPP { return confinementFailure("Landlock's read allow list", reading) }
        let filtered = csystem_filter_system_calls(getpid())
        if filtered != 0 { return confinementFailure("seccomp", filtered) }
        return nil
    }

    /// The failure of a confinement `step` that failed with `error`.
    private static func confinementFailure(_ step: String, _ error: Int32) -> TransformFailure {
        TransformFailure(
            .transformFailed, "the SVG renderer could not confine itself (\(step): \(RendererProcess.reason(error)))")
    }

    /// Whether the kernel offers Landlock (`csystem_restrict_files_and_signals` then confines the child's files,
    /// signals and /proc reads too).
    package static var hasLandlock: Bool { csystem_landlock_abi() > 0 }

    /// What a confined child is refused, tried instead of a conversion when the request says `probe` (tests): one
    /// `name: outcome` line per attempt, the outcome `allowed` or the system's wording of the errno. Each attempt is
    /// one a document that took control of the child would make: a TCP socket, running a program, a new process,
    /// a signal to its parent or to every process, leaving its process group, reading its parent's environment,
    /// making a file, reading a file beside the document (`input.beside`, which the test writes); and then a report
    /// too long for the parent to pass on whole (`SVGRenderer.bounded`).
    private static func probe(_ request: Request) -> String {
        func outcome(_ result: Int32) -> String { result >= 0 ? "allowed" : RendererProcess.reason(errno) }
        var lines: [String] = []
        let socketMade = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        lines.append("socket: \(outcome(socketMade))")
        if socketMade >= 0 { close(socketMade) }
        // On success the child becomes /bin/true, which exits 0 with no report: the parent says so.
        let arguments: [UnsafeMutablePointer<CChar>?] = [strdup("true"), nil]
        lines.append("execve: \(outcome(execv("/bin/true", arguments)))")
        free(arguments[0])
        let forked = fork()
        if forked == 0 { _exit(0) }
        if forked > 0 { waitpid(forked, nil, 0) }
        lines.append("fork: \(outcome(forked))")
        lines.append("kill parent: \(outcome(kill(request.parent, 0)))")
        lines.append("kill every process: \(outcome(kill(-1, 0)))")
        lines.append("setpgid: \(outcome(setpgid(0, 0)))")
        let environment = open("/proc/\(request.parent)/environ", O_RDONLY | O_CLOEXEC)
        lines.append("parent's environ: \(outcome(environment))")
        if environment >= 0 { close(environment) }
        let made = open(request.input + ".probe", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        lines.append("new file: \(outcome(made))")
        if made >= 0 { close(made) }
        let beside = open(request.input + ".beside", O_RDONLY | O_CLOEXEC)
        lines.append("file beside: \(outcome(beside))")
        if beside >= 0 { close(beside) }
        // A report longer than the parent passes on, with characters it does not pass (a bell, a line break): what
        // a child that read a file would send back through it.
        lines.append("padding: " + String(repeating: "\u{7}0123456789", count: 1000))
        return lines.joined(separator: "\n")
    }

    /// The child's name in `ps` and `top` (its `comm`).
    static let processName = "rp-svg-renderer"

    /// Writes `report` on the report descriptor (a failure leaves the parent with no report, which it reports).
    private static func report(_ report: Report) {
        _ = report.bytes.withUnsafeBytes { FileSystem.writeAll(RendererProcess.reportDescriptor, $0) }
    }

    /// One conversion, as the parent asks for it: the words after `flag`.
    struct Request: Equatable {
        /// The SVG document's path (the fetched file).
        var input: String
        /// What to write: JPEG or PNG.
        var format: MediaType
        /// The longest side written (never enlarged), or nil for the document's own size.
        var maximumSide: Int?
        /// JPEG quality, 1 to 100.
        var quality: Int
        /// RLIMIT_AS, in bytes.
        var addressSpace: Int
        /// RLIMIT_CPU's soft limit, in seconds.
        var cpuSeconds: Int
        /// RLIMIT_FSIZE, in bytes.
        var fileSize: Int
        /// The process that spawned the child.
        var parent: Int32
        /// Whether the child, once confined, reports what it is refused (`probe`) instead of converting: for tests.
        var probe = false
    }

    /// What the child tells its parent: the size it wrote, or the converter's failure, code and detail as they
    /// are (so an SVG that fails in the child fails with the same problem as in process).
    enum Report: Equatable {
        /// The image was written, at this size.
        case converted(ImageSize)
        /// The converter threw this.
        case failed(TransformFailure)

        /// `ok WIDTH HEIGHT`, or `failed CODE` and the detail on the next line.
        var bytes: [UInt8] {
            switch self {
            case .converted(let size): return Array("ok \(size.width) \(size.height)\n".utf8)
            case .failed(let failure): return Array("failed \(failure.code.rawValue)\n\(failure.detail)".utf8)
            }
        }

        /// The report in `bytes`, or nil when they hold none (the child ended before it reported).
        init?(_ bytes: [UInt8]) {
            let text = String(decoding: bytes, as: UTF8.self)
            let head = text.prefix { $0 != "\n" }
            let words = head.split(separator: " ")
            if words.count == 3, words[0] == "ok", let width = Int(words[1]), let height = Int(words[2]) {
                self = .converted(ImageSize(width: width, height: height))
            } else if words.count == 2, words[0] == "failed", text.count > head.count {
                let detail = String(text[text.index(after: head.endIndex)...])
                self = .failed(TransformFailure(EnrichmentProblem.Code(rawValue: String(words[1])), detail))
            } else {
                return nil
            }
        }
    }
}

extension SVGRendererChild.Request {
    /// The output formats by their file extensions, as the words name them.
    static let formats: [String: MediaType] = ["jpg": .jpeg, "png": .png, "gif": .gif]

    /// The words after `flag`.
    var words: [String] {
        [
            "input=\(input)", "format=\(format.fileExtension)", "max-side=\(maximumSide ?? 0)",
            "quality=\(quality)", "address-space=\(addressSpace)", "cpu-seconds=\(cpuSeconds)",
            "file-size=\(fileSize)", "parent=\(parent)",
        ] + (probe ? ["probe=1"] : [])
    }

    /// The request these words make, or nil when they make none.
    init?(words: [String]) {
        var values: [String: String] = [:]
        for word in words {
            guard let equals = word.firstIndex(of: "=") else { return nil }
            values[String(word[..<equals])] = String(word[word.index(after: equals)...])
        }
        guard let input = values["input"], !input.isEmpty,
            let format = values["format"].flatMap({ Self.formats[$0] }),
            let side = values["max-side"].flatMap({ Int($0) }), side >= 0,
            let quality = values["quality"].flatMap({ Int($0) }),
            let addressSpace = values["address-space"].flatMap({ Int($0) }), addressSpace > 0,
            let cpuSeconds = values["cpu-seconds"].flatMap({ Int($0) }), cpuSeconds > 0,
            let fileSize = values["file-size"].flatMap({ Int($0) }), fileSize > 0,
            let parent = values["parent"].flatMap({ Int32($0) }), parent > 0
        else { return nil }
        self.init(
            input: input, format: format, maximumSide: side == 0 ? nil : side, quality: quality,
            addressSpace: addressSpace, cpuSeconds: cpuSeconds, fileSize: fileSize, parent: parent,
            probe: values["probe"] == "1")
    }
}
