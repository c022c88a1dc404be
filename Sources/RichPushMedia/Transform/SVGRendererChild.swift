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
/// its bound, the JPEG quality, its address-space and CPU limits, and the parent's id. The image is written to
/// descriptor 3, the parent's partial attachment file; the report (`Report`) to descriptor 4.
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

    /// The child's work: bound itself, convert, report. Its exit status: 0 when it reported (a success or a
    /// failure), 70 when it could not bound itself (it then converts nothing), 64 when its words are not a request.
    static func run(_ words: [String], converter: some ImageConverter) -> Int32 {
        guard let request = Request(words: words) else {
            report(.failed(TransformFailure(.transformFailed, "the SVG renderer was started with \(words)")))
            return 64
        }
        // Ends with the parent (the thread that spawned it), so that a parent killed outright leaves no renderer.
        guard csystem_die_with_parent(request.parent) == 0 else { return 70 }
        // Its name in `ps` and `top`, which would otherwise be `exe`: the parent starts `/proc/self/exe`.
        nameThisThread(processName)
        // No core dump: a renderer killed at its CPU limit (SIGXCPU) would write one as large as its memory.
        for (limit, value) in [
            (CSYSTEM_LIMIT_CORE, 0), (CSYSTEM_LIMIT_ADDRESS_SPACE, request.addressSpace),
            (CSYSTEM_LIMIT_CPU, request.cpuSeconds),
        ] {
            // The CPU limit's hard value one second past the soft one: SIGXCPU, then SIGKILL if it is caught.
            let hard = limit == CSYSTEM_LIMIT_CPU ? value + 1 : value
            guard csystem_set_limit(limit, UInt64(value), UInt64(hard)) == 0 else { return 70 }
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
            report(.failed(error))
        }
        return 0
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
        /// The process that spawned the child.
        var parent: Int32
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
            "parent=\(parent)",
        ]
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
            let parent = values["parent"].flatMap({ Int32($0) }), parent > 0
        else { return nil }
        self.init(
            input: input, format: format, maximumSide: side == 0 ? nil : side, quality: quality,
            addressSpace: addressSpace, cpuSeconds: cpuSeconds, parent: parent)
    }
}
