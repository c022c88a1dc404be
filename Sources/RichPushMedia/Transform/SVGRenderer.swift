import RichPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Converts SVG documents in a child process each (`TransformSettings.svgRenderer`, `SVGRendererChild`), so that a
/// conversion told to stop ends then: librsvg never looks at libvips's stop while it renders a filter (an
/// `feMorphology` of radius 400 over 2,000 x 2,000 pixels renders for minutes, and a pre-scan cannot list every such
/// construct: huge blurs, cairo dash patterns, nested group opacity), so in process it held its thread and a core
/// until it returned, possibly never. Here the step's stop kills the child's process group (SIGKILL), the thread
/// reaps it and is free at once, and the step removes its partial output as it does a stopped conversion's.
///
/// The parent keeps what it did before the pixels: the document's pre-scan and header (in the converter's
/// `header(of:type:)`, read without rendering) and the pixel limit. The child runs the same conversion
/// (`ImageConverter.convert`: the same pre-scan again, then libvips), writing the same bytes into the same partial
/// attachment file, within:
/// - an address space of `addressSpace(maximumPixels:)`, so that a document whose filters multiply its surfaces
///   fails instead of taking the machine's memory;
/// - the CPU seconds left to the deadline, plus one (`RLIMIT_CPU`): a backstop should the parent not kill it (the
///   parent's own end kills it too: `PR_SET_PDEATHSIG`);
/// - a file size of `fileSize(maximumPixels:)` (`RLIMIT_FSIZE`), so that a child gone wrong cannot fill the disk
///   through its output;
/// - an environment of `environment` alone (none of the parent's secrets: a bearer token, S3 credentials);
/// - the confinement `SVGRendererChild` gives itself before librsvg parses the document: no new privileges, no
///   capabilities, a seccomp filter refusing sockets, programs, processes and signals or tracing beyond itself,
///   and a Landlock domain where the kernel has Landlock (no file written or made by path, none of the parent's
///   /proc files read).
struct SVGRenderer: Sendable {
    /// The executable (`TransformSettings.svgRenderer`).
    let executable: String
    /// The child's RLIMIT_AS, in bytes.
    let addressSpace: Int
    /// The child's RLIMIT_FSIZE, in bytes.
    let fileSize: Int
    /// Whether each child, once confined, reports what it is refused instead of converting (tests).
    var probing = false
    /// The children running now, by process id (what tests watch for their end).
    private let running = LockedValue<Set<Int32>>([])

    /// The address space the child's process starts in (its binary, the Swift runtime, libvips, librsvg, cairo,
    /// glib's per-thread malloc arenas), with room to spare: 1 GiB.
    static let baseAddressSpace = 1 << 30
    /// Bytes of address space per pixel the header may declare: 16, four RGBA surfaces of the whole picture (the
    /// one rendered into, and a filter's source, result and one intermediate).
    static let bytesPerPixel = 16

    /// Bytes of output file per pixel the header may declare: 6. A PNG, the larger of the two formats written, is
    /// at most 4 bytes a pixel (8-bit RGBA, stored uncompressed) and a filter byte a row (at most one a pixel, for
    /// a picture one pixel wide), plus zlib's and its chunks' framing (under 1%); a JPEG is 3 bytes a pixel
    /// before compression, and stays below that even at quality 100 on noise.
    static let fileBytesPerPixel = 6
    /// Bytes of output file beyond the pixels': 1 MiB, for a PNG's or JPEG's headers and a tiny picture's framing.
    static let baseFileSize = 1 << 20

    init(executable: String, maximumPixels: Int) {
        self.executable = executable
        addressSpace = Self.addressSpace(maximumPixels: maximumPixels)
        fileSize = Self.fileSize(maximumPixels: maximumPixels)
    }

    /// The child's address-space limit for a pixel limit: `baseAddressSpace` + `bytesPerPixel` per pixel
    /// (1.8 GiB for the default 50,000,000), saturating.
    static func addressSpace(maximumPixels: Int) -> Int {
        saturating(baseAddressSpace, plus: bytesPerPixel, times: maximumPixels)
    }

    /// The child's file-size limit for a pixel limit: `baseFileSize` + `fileBytesPerPixel` per pixel, saturating
    /// (287 MiB for the default 50,000,000): the largest file a conversion of an image the step accepts writes,
    /// with margin. The step accepts a larger output than its image cap and converts again smaller, so the cap is
    /// no bound here; the pixel limit is, as the output never has more pixels than the header declares.
    static func fileSize(maximumPixels: Int) -> Int {
        saturating(baseFileSize, plus: fileBytesPerPixel, times: maximumPixels)
    }

    /// `base + perPixel * pixels`, or `Int.max` past it.
    private static func saturating(_ base: Int, plus perPixel: Int, times pixels: Int) -> Int {
        let (product, overflow) = pixels.multipliedReportingOverflow(by: perPixel)
        let (total, overflowAgain) = product.addingReportingOverflow(base)
        return overflow || overflowAgain ? Int.max : total
    }

    /// The ids of the children running now.
    var processes: [Int32] { running.withLock { Array($0) } }

    /// `request` converted in a child process; returns the size written, as `ImageConverter.convert` does.
    /// - Throws: the child's own failure (its code and detail, as in process); `transform-failed` when it could
    ///   not be started, or ended without a report (a resource limit, a crash: the detail says which), or reported
    ///   a code no failure has (its detail kept); the child's detail is `bounded`; a failure
    ///   the step replaces with the stop's reason when `stop` killed it.
    func convert(
        _ request: ConversionRequest, stop: StopSignal, deadline: ContinuousClock.Instant
    ) throws(TransformFailure) -> ImageSize {
        let left = deadline - .now
        // Whole seconds, rounded up, and one more: RLIMIT_CPU counts in seconds, and the parent kills at the
        // deadline anyway.
        let cpuSeconds = max(1, Int((left + .milliseconds(999)).components.seconds)) + 1
        let child = SVGRendererChild.Request(
            input: request.input, format: request.format, maximumSide: request.maximumSide, quality: request.quality,
            addressSpace: addressSpace, cpuSeconds: cpuSeconds, fileSize: fileSize, parent: getpid(),
            probe: probing)
        let process = RendererProcess()
        let finished = try stop.whileRegistered({ process.kill() }) { () throws(TransformFailure) in
            try process.run(
                executable, arguments: [executable, SVGRendererChild.flag] + child.words,
                environment: Self.environment, output: request.output.fileDescriptor,
                started: { pid in running.withLock { _ = $0.insert(pid) } },
                ended: { pid in running.withLock { _ = $0.remove(pid) } })
        }
        if finished.killed {
            throw TransformFailure(.expired, "the SVG renderer was stopped")
        }
        if case .exited(0) = finished.ending, let report = SVGRendererChild.Report(finished.report) {
            switch report {
            case .converted(let size): return size
            case .failed(let failure): throw Self.passedOn(failure)
            }
        }
        throw TransformFailure(.transformFailed, describe(finished.ending, cpuSeconds: cpuSeconds))
    }

    /// The most bytes of a failure's detail taken from the child's report: 512. The detail goes back to the payload's
    /// sender as its problem's text, so a document that took control of the child could otherwise send back through
    /// it whatever the child can read (the report is read up to 16 KiB); bounded, it is no bulk channel. A converter's
    /// own detail is cut to 400 characters and `...` in process (`FailureDetail`), so an ASCII one, what libvips and
    /// librsvg say, passes whole and reads as it does in process.
    static let maximumDetail = 512

    /// The failure the child reported, as the parent passes it on to the payload's sender: its code if it is a known
    /// one (else `transform-failed`), its detail `bounded`. A child that took control of librsvg writes what it likes
    /// into its report.
    static func passedOn(_ failure: TransformFailure) -> TransformFailure {
        let code = EnrichmentProblem.Code.known.contains(failure.code) ? failure.code : .transformFailed
        return TransformFailure(code, bounded(failure.detail))
    }

    /// `detail`, from the child's report, as the parent passes it on: printable characters alone (a line break
    /// becomes `; `, as libvips's lines are joined in process; any other control, format or unassigned character
    /// `?`), cut to at most `maximumDetail` bytes of UTF-8 with `...` at the end when cut.
    static func bounded(_ detail: String) -> String {
        var printable = String.UnicodeScalarView()
        for scalar in detail.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control where scalar == "\n": printable.append(contentsOf: "; ".unicodeScalars)
            case .control, .format, .privateUse, .surrogate, .unassigned, .lineSeparator, .paragraphSeparator:
                printable.append("?")
            default: printable.append(scalar)
            }
        }
        let text = String(printable)
        guard text.utf8.count > maximumDetail else { return text }
        // Whole characters, with room for the `...` that says it was cut.
        var cut = ""
        for character in text {
            guard cut.utf8.count + character.utf8.count <= maximumDetail - 3 else { break }
            cut.append(character)
        }
        return cut + "..."
    }

    /// Why a child that gave no report ended, for the failure's detail.
    private func describe(_ ending: RendererProcess.Ending, cpuSeconds: Int) -> String {
        switch ending {
        case .exited(let status):
            return "the SVG renderer exited with status \(status) and no result"
        case .signalled(let signal) where signal == SIGXCPU:
            return "the SVG renderer used its \(cpuSeconds) s of CPU time and was ended"
        case .signalled(let signal) where signal == SIGKILL:
            return "the SVG renderer was killed (past its \(cpuSeconds) s of CPU time, or by the system for memory)"
        case .signalled(let signal):
            return "the SVG renderer ended on signal \(signal) (its address space is limited to \(addressSpace) bytes)"
        }
    }

    /// The child's environment: what rendering reads, and no more, so that none of the parent's secrets (serve's
    /// bearer token, `AWS_SECRET_ACCESS_KEY`, `REDISCLI_AUTH`) is in a process that parses hostile documents. Of
    /// the parent's, the names in `passedVariables` and those starting with one of `passedPrefixes`; and two set
    /// here. `VIPSHOME` names no directory, so that libvips finds none of its modules (ImageMagick's, libheif's,
    /// poppler's, OpenSlide's, JPEG XL's): the child reads SVG alone, which libvips renders itself through
    /// librsvg, and opening ImageMagick's coders is most of libvips's start-up. `SWIFT_BACKTRACE` off: a renderer
    /// that crashes is reported by its signal, not after seconds of a symbolicated backtrace. Read once, at the
    /// first SVG.
    static let environment: [String] = {
        var environment: [String] = []
        var cursor = environ
        while let entry = cursor.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "="), Self.passes(String(text[..<equals])) {
                environment.append(text)
            }
            cursor += 1
        }
        return environment + ["VIPSHOME=/nonexistent", "SWIFT_BACKTRACE=enable=no"]
    }()

    /// The variables the child gets from the parent, by name: where fontconfig finds its configuration, fonts and
    /// caches (`HOME`, the XDG directories), the locale (fontconfig's default language, which picks among fonts
    /// for text without `xml:lang`), the dynamic linker's path (the binary's libraries may be found by it), the
    /// temporary directory, and the rendering libraries' switches (FreeType's properties, HarfBuzz's shapers,
    /// pixman's and orc's code paths, glib's allocator). Found by logging the child's `getenv` calls while it
    /// rendered text, gradients and filters.
    static let passedVariables: Set<String> = [
        "HOME", "TMPDIR", "LD_LIBRARY_PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES",
        "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_HOME", "XDG_DATA_DIRS", "XDG_CACHE_HOME",
        "FREETYPE_PROPERTIES", "HB_SHAPER_LIST", "PANGOCAIRO_BACKEND", "PIXMAN_DISABLE", "ORC_CODE", "G_SLICE",
    ]

    /// The variables the child gets from the parent, by prefix: libvips's settings (`VIPS_CONCURRENCY`,
    /// `VIPS_NOVECTOR`, ...) and fontconfig's (`FONTCONFIG_FILE`, `FONTCONFIG_PATH`, `FC_LANG`, ...).
    static let passedPrefixes = ["VIPS_", "FONTCONFIG_", "FC_"]

    /// Whether the parent's variable `name` is passed to the child (`VIPSHOME` and `SWIFT_BACKTRACE` are set).
    static func passes(_ name: String) -> Bool {
        passedVariables.contains(name) || passedPrefixes.contains { name.hasPrefix($0) }
    }
}
