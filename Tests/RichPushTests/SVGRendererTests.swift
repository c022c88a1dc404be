import FixtureOrigin
import Foundation
import Testing

@testable import RichPush
@testable import RichPushMedia
@testable import RichPushTransform

/// SVG rendered in a child process each (`TransformSettings.svgRenderer`, the built `richpush` binary as the CLI sets
/// it): the same bytes and the same failures as in process, and a document librsvg renders without end killed when
/// its payload ends, its thread free again at once.
@Suite("Transformation: SVG rendered in a child process", .offPool)
struct SVGRendererTests {
    /// An `feMorphology` of radius 1,000 over 4,000 x 4,000 pixels: librsvg 2.54 renders it for minutes (radius 400
    /// over 2,000 x 2,000 took 25 s here) and never looks at libvips's stop; the pre-scan does not refuse it.
    static let spinning = """
        <svg xmlns="http://www.w3.org/2000/svg" width="4000" height="4000"><filter id="f"><feMorphology \
        operator="dilate" radius="1000"/></filter><rect width="4000" height="4000" fill="blue" filter="url(#f)"/></svg>
        """

    /// An SVG with what a real one has: a gradient, a path, a transform, opacity and a small filter.
    static let drawing = """
        <svg xmlns="http://www.w3.org/2000/svg" width="300" height="200" viewBox="0 0 300 200"><defs>\
        <linearGradient id="g"><stop offset="0" stop-color="#f60"/><stop offset="1" stop-color="#06f" \
        stop-opacity="0.5"/></linearGradient><filter id="b"><feGaussianBlur stdDeviation="3"/></filter></defs>\
        <rect width="300" height="200" fill="url(#g)"/><path d="M20 180 C80 20 220 20 280 180" stroke="#222" \
        stroke-width="8" fill="none" filter="url(#b)"/><g transform="rotate(15 150 100)" opacity="0.7">\
        <circle cx="150" cy="100" r="40" fill="#0c0"/></g></svg>
        """

    /// Text in several scripts and families, which fontconfig finds the fonts of: what the child's read allow list
    /// must not lose (a font it cannot read is silently replaced by another, or by none).
    static let text = """
        <svg xmlns="http://www.w3.org/2000/svg" width="400" height="240"><rect width="400" height="240" fill="#fff"/>\
        <text x="10" y="40" font-size="28">Hello, wörld — ﬁ</text><text x="10" y="80" font-family="serif" \
        font-size="24" font-weight="bold">Serif bold 123</text><text x="10" y="120" font-family="monospace" \
        font-size="20" font-style="italic">mono italic</text><text x="10" y="160" font-size="24">日本語 ελληνικά \
        عربي हिन्दी</text><text x="10" y="200" font-size="24" xml:lang="zh-CN">直骨 ★ ∑</text></svg>
        """

    /// Noise over 1,000 x 1,000 pixels, in every channel: a PNG of about 4 MB, which no compression shrinks.
    static let noise = """
        <svg xmlns="http://www.w3.org/2000/svg" width="1000" height="1000"><filter id="n"><feTurbulence \
        baseFrequency="0.9" numOctaves="2" stitchTiles="stitch"/></filter><rect width="1000" height="1000" \
        filter="url(#n)"/></svg>
        """

    /// A directory the beds' origins serve: the SVGs above, one that does not parse, one that names a file, and
    /// the fixtures' icon.svg and banner.webp.
    static let media: String = {
        let directory = try! temporaryDirectory()
        let files: [String: String] = [
            "spinning.svg": spinning, "drawing.svg": drawing, "noise.svg": noise, "text.svg": text,
            "broken.svg": #"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect"#,
            "external.svg":
                #"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">"#
                + #"<image href="file:///etc/hostname"/></svg>"#,
        ]
        for (name, text) in files {
            _ = FileManager.default.createFile(atPath: directory + "/" + name, contents: Data(text.utf8))
        }
        for name in ["icon.svg", "banner.webp"] {
            try! FileManager.default.copyItem(
                atPath: FixtureRoutes.fixturesDirectory + "/media/" + name, toPath: directory + "/" + name)
        }
        return directory
    }()

    /// A bed whose SVGs render in the built `richpush` (nil: in this process, as without the setting).
    static func bed(
        renderer: String? = CLI.binary, _ adjust: (inout Enricher.Configuration.Transform) -> Void = { _ in }
    ) throws -> TestBed {
        try TestBed(media: media) { configuration in
            configuration.transform.converter = VipsConverter()
            configuration.transform.svgRenderer = renderer
            adjust(&configuration.transform)
        }
    }

    /// A process seen running: its id, and its start time (field 22 of /proc/PID/stat), so that a new process
    /// that reuses the id is not taken for it.
    struct Seen {
        var pid: Int32
        var start: String
        /// Its CPU time (user and system, in clock ticks) when last read.
        var ticks = 0

        init?(_ pid: Int32) {
            guard let fields = Self.fields(pid) else { return nil }
            self.pid = pid
            start = fields[21]
            ticks = (Int(fields[13]) ?? 0) + (Int(fields[14]) ?? 0)
        }

        /// The fields of /proc/PID/stat (the command, in parentheses, is one), or nil when there is none.
        static func fields(_ pid: Int32) -> [String]? {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = text.lastIndex(of: ")")
            else { return nil }
            return [String(pid), "comm"]
                + text[text.index(close, offsetBy: 2)...].split(separator: " ").map(String.init)
        }

        /// Whether it still runs (a zombie not yet reaped counts), reading its CPU time while it does.
        mutating func runs() -> Bool {
            guard let fields = Self.fields(pid), fields[21] == start else { return false }
            ticks = (Int(fields[13]) ?? 0) + (Int(fields[14]) ?? 0)
            return true
        }
    }

    /// The renderer child the engine runs now, once there is one.
    static func child(of enricher: Enricher) async throws -> Seen {
        var seen: Seen?
        try await waitUntil("the SVG renderer to start", every: .milliseconds(5)) {
            seen = enricher.svgRenderers.first.flatMap(Seen.init)
            return seen != nil
        }
        return seen!
    }

    /// Waits for `child` to be gone (reaped by the engine), and checks that it ended well within the CPU limit it
    /// was given (`cpuSeconds`): the stop killed it, not the kernel's backstop. CPU time, unlike the wall clock,
    /// does not stretch on a loaded machine.
    static func expectKilled(_ child: Seen, cpuSeconds: Int) async throws {
        var child = child
        try await waitUntil("the SVG renderer \(child.pid) to end", within: .seconds(30), every: .milliseconds(5)) {
            !child.runs()
        }
        let ticks = Int(sysconf(Int32(_SC_CLK_TCK)))
        #expect(
            child.ticks < (cpuSeconds * ticks) - ticks / 2,
            "the renderer used \(child.ticks) ticks of CPU: ended by its limit of \(cpuSeconds) s, not by the stop")
    }

    @Test(
        """
        an SVG that renders without end ends expired at its deadline, its renderer killed, and the one thread \
        converts the next image at once
        """
    )
    func spinningExpires() async throws {
        let bed = try Self.bed { $0.concurrency = 1 }
        try await withEnricher(bed.configuration) { enricher in
            let deadline = Duration.milliseconds(1500)
            let payload = Task {
                await enricher.enrich(TestBed.adobePayload(bed.url("/media/spinning.svg")), timeout: deadline)
            }
            let child = try await Self.child(of: enricher)
            let result = await payload.value
            #expect(result.outcome == .expired, "\(result.problems)")
            #expect(result.problems.map(\.code) == [.expired])
            // Answered at its deadline, not when librsvg returns (a bound, not a time: the machine may be loaded).
            #expect(result.elapsed < deadline + .seconds(2), "answered after \(result.elapsed)")
            // Its CPU limit: the 1.5 s left to the deadline rounded up, and one more.
            try await Self.expectKilled(child, cpuSeconds: 3)
            try await waitUntil("the thread to be free", every: .milliseconds(5)) {
                enricher.transformsRunning == 0 && enricher.svgRenderers.isEmpty
            }
            // The one thread converts again: a WebP in process, an SVG in a new child, each well within its
            // deadline (a thread still held by the first SVG would expire both).
            for name in ["banner.webp", "icon.svg"] {
                let next = await enricher.enrich(
                    TestBed.adobePayload(bed.url("/media/\(name)")), timeout: .seconds(10))
                #expect(next.outcome == .complete, "\(name): \(next.problems)")
                #expect(next.attachments.first?.media.transformation?.steps == [.transcoded, .metadataStripped])
                _ = enricher.removeAttachments(of: next)
            }
            #expect(bed.entriesOnDisk().isEmpty, "\(bed.entriesOnDisk())")
        }
    }

    @Test("shutdown kills an SVG renderer under way: its payload ends cancelled, nothing left")
    func shutdownKills() async throws {
        let bed = try Self.bed()
        let enricher = try Enricher(configuration: bed.configuration)
        let payload = Task {
            await enricher.enrich(TestBed.adobePayload(bed.url("/media/spinning.svg")), timeout: .seconds(60))
        }
        let child = try await Self.child(of: enricher)
        // No drain: what is in flight is cancelled, the renderer with it.
        await enricher.shutdown(drainTimeout: .zero)
        let result = await payload.value
        #expect(result.outcome == .cancelled, "\(result.problems)")
        #expect(result.problems.map(\.code) == [.cancelled])
        // Left alone, it would run until its CPU limit, the minute left to the deadline and one more.
        try await Self.expectKilled(child, cpuSeconds: 61)
        #expect(enricher.transformsRunning == 0)
        #expect(bed.entriesOnDisk().isEmpty, "\(bed.entriesOnDisk())")
    }

    @Test(
        "an SVG converts to the same bytes in a child as in process, and fails with the same problem",
        arguments: [
            ("icon.svg", nil), ("drawing.svg", nil), ("drawing.svg", 120), ("text.svg", nil), ("broken.svg", nil),
            ("external.svg", nil),
        ] as [(String, Int?)])
    func sameAsInProcess(name: String, bound: Int?) async throws {
        var outcomes: [String] = []
        for renderer in [nil, CLI.binary] {
            let bed = try Self.bed(renderer: renderer) { $0.maximumDimension = bound }
            try await withEnricher(bed.configuration) { enricher in
                let result = await enricher.enrich(TestBed.adobePayload(bed.url("/media/\(name)")))
                if let media = result.attachments.first?.media {
                    outcomes.append("\(media.type.mime) \(media.sha256) \(media.dimensions.map { "\($0)" } ?? "")")
                } else {
                    outcomes.append(result.problems.map { "\($0.code): \($0.detail)" }.joined(separator: "; "))
                }
                _ = enricher.removeAttachments(of: result)
            }
        }
        #expect(outcomes.count == 2 && outcomes[0] == outcomes[1], "in process, then in a child: \(outcomes)")
        // Each case is what it is meant to be: conversions, and two failures (found before rendering, by the
        // header's read, which stays in the parent; `failsAsInProcess` has the child's own).
        let converted = !name.hasPrefix("broken") && !name.hasPrefix("external")
        #expect(outcomes[0].hasPrefix("image/png") == converted, "\(outcomes[0])")
    }

    /// A request to convert `name` (of `media`) as PNG into `output`, writing nothing in process.
    static func request(_ name: String, into output: Int32) -> ConversionRequest {
        ConversionRequest(
            input: media + "/" + name, type: .svg,
            output: ImageOutput(fileDescriptor: output) { _ throws(TransformFailure) in }, format: .png,
            maximumSide: nil, quality: 85, animated: false)
    }

    @Test(
        "a conversion that fails in the child fails with the converter's own code and detail",
        arguments: ["broken.svg", "external.svg"])
    func failsAsInProcess(name: String) throws {
        // Straight to the conversion, without the step's header read (where these fail first in an engine).
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = open(directory + "/out.png", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        defer { close(output) }
        var failures: [TransformFailure?] = []
        let renderer = SVGRenderer(executable: CLI.binary, maximumPixels: 50_000_000)
        for inChild in [false, true] {
            do throws(TransformFailure) {
                if inChild {
                    _ = try renderer.convert(
                        Self.request(name, into: output), stop: StopSignal(), deadline: .now + .seconds(30))
                } else {
                    _ = try VipsConverter().convert(Self.request(name, into: output), stop: StopSignal())
                }
                failures.append(nil)
            } catch {
                failures.append(error)
            }
        }
        #expect(failures[0] != nil && failures[0] == failures[1], "in process, then in a child: \(failures)")
        #expect(failures[0]?.code == .transformFailed)
    }

    @Test("the renderer's CPU limit ends a child that no stop reaches, as transform-failed")
    func cpuLimit() throws {
        // The backstop alone: the step's stop is never signalled, so the child runs until RLIMIT_CPU (the 0.5 s
        // left to the deadline rounded up, and one more: 2 s) ends it.
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = open(directory + "/out.png", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        defer { close(output) }
        let renderer = SVGRenderer(executable: CLI.binary, maximumPixels: 50_000_000)
        // Fired only if the limit does not end the child: the test then fails (the child was stopped) instead of
        // waiting for librsvg.
        let safety = StopSignal()
        DispatchQueue.global().asyncAfter(deadline: .now() + 30) { safety.stop() }
        #expect {
            try renderer.convert(
                Self.request("spinning.svg", into: output), stop: safety, deadline: .now + .milliseconds(500))
        } throws: { error in
            let failure = error as? TransformFailure
            return failure?.code == .transformFailed && failure?.detail.contains("2 s of CPU time") == true
        }
        #expect(renderer.processes.isEmpty)
    }

    @Test(
        """
        a renderer child has the rendering's variables of the parent's environment alone, and is confined (no new \
        privileges, a seccomp filter) while librsvg renders
        """
    )
    func environmentAndConfinement() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = open(directory + "/out.png", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        defer { close(output) }
        let renderer = SVGRenderer(executable: CLI.binary, maximumPixels: 50_000_000)
        let stop = StopSignal()
        let conversion = Task.detached {
            try? renderer.convert(Self.request("spinning.svg", into: output), stop: stop, deadline: .now + .seconds(60))
        }
        defer { stop.stop() }
        var pid: Int32 = 0
        try await waitUntil("the SVG renderer to start", every: .milliseconds(5)) {
            pid = renderer.processes.first ?? 0
            return pid > 0
        }
        // The filter comes after libvips has started, before the document is parsed: while it spins, it is there.
        var status: [String] = []
        try await waitUntil("the renderer \(pid) to be confined", every: .milliseconds(5)) {
            let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            status = text.split(separator: "\n").map(String.init).filter {
                $0.hasPrefix("NoNewPrivs:") || $0.hasPrefix("Seccomp:") || $0.hasPrefix("CapEff:")
            }
            return status.contains("Seccomp:\t2")
        }
        #expect(status.contains("NoNewPrivs:\t1") && status.contains("CapEff:\t0000000000000000"), "\(status)")
        let environment = try #require(FileManager.default.contents(atPath: "/proc/\(pid)/environ"))
        let names = Set(
            environment.split(separator: 0).map { String(decoding: $0.prefix { $0 != 0x3D }, as: UTF8.self) })
        let parents = Set(ProcessInfo.processInfo.environment.keys)
        // VIPSHOME and SWIFT_BACKTRACE are the child's own.
        let withheld = parents.filter { !SVGRenderer.passes($0) }.subtracting(["VIPSHOME", "SWIFT_BACKTRACE"])
        // This process has variables no renderer needs (PATH at least): none reached the child.
        #expect(withheld.contains("PATH"))
        #expect(names.isDisjoint(with: withheld), "\(names.intersection(withheld).sorted())")
        #expect(names.subtracting(parents.filter(SVGRenderer.passes)) == ["VIPSHOME", "SWIFT_BACKTRACE"], "\(names)")
        stop.stop()
        _ = await conversion.value
        #expect(renderer.processes.isEmpty)
    }

    @Test(
        """
        a confined renderer child cannot open a socket, run a program, fork, signal another process, or read a file \
        outside its read allow list; its report reaches the parent bounded
        """
    )
    func confinedChildIsRefused() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = open(directory + "/out.png", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        defer { close(output) }
        var renderer = SVGRenderer(executable: CLI.binary, maximumPixels: 50_000_000)
        renderer.probing = true
        // The probe tries to make `input.probe` beside the document, and to read `input.beside`: a copy in the
        // test's own directory, and a file the test writes there.
        let input = directory + "/drawing.svg"
        try FileManager.default.copyItem(atPath: Self.media + "/drawing.svg", toPath: input)
        try "not for the renderer".write(toFile: input + ".beside", atomically: false, encoding: .utf8)
        var request = Self.request("drawing.svg", into: output)
        request.input = input
        var detail = ""
        do throws(TransformFailure) {
            _ = try renderer.convert(request, stop: StopSignal(), deadline: .now + .seconds(30))
        } catch {
            detail = error.detail
        }
        let refused = String(cString: strerror(EPERM))
        // Landlock, where the kernel has it, refuses by path: the parent's /proc files, any file made, and any file
        // read outside the read allow list (the document is on it, the file beside it is not).
        let denied = SVGRendererChild.hasLandlock ? String(cString: strerror(EACCES)) : "allowed"
        let lines = detail.split(separator: "; ").map(String.init)
        #expect(
            lines.dropLast() == [
                "socket: \(refused)", "execve: \(refused)", "fork: \(refused)", "kill parent: \(refused)",
                "kill every process: \(refused)", "setpgid: \(refused)", "parent's environ: \(denied)",
                "new file: \(denied)", "file beside: \(denied)",
            ], "\(detail)")
        // The probe's last line, 11,000 bytes with a bell in each 11, reaches the parent cut, in printable characters.
        #expect(detail.utf8.count == SVGRenderer.maximumDetail && detail.hasSuffix("..."), "\(detail.utf8.count)")
        #expect(lines.last?.hasPrefix("padding: ?0123456789?0123456789") == true, "\(detail)")
        #expect(!detail.unicodeScalars.contains { $0.properties.generalCategory == .control }, "\(detail)")
        #expect(!FileManager.default.fileExists(atPath: input + ".probe") || !SVGRendererChild.hasLandlock)
    }

    @Test("the renderer child's file-size limit fails an output larger than the pixel limit allows, as store-failed")
    func fileSizeLimit() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var sizes: [Int] = []
        var failures: [TransformFailure?] = []
        // One pixel allowed: a limit of 1 MiB and 6 bytes, which the noise's 4 MB PNG exceeds; then the default.
        for maximumPixels in [1, 50_000_000] {
            let path = directory + "/out-\(maximumPixels).png"
            let output = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            defer { close(output) }
            let renderer = SVGRenderer(executable: CLI.binary, maximumPixels: maximumPixels)
            do throws(TransformFailure) {
                _ = try renderer.convert(
                    Self.request("noise.svg", into: output), stop: StopSignal(), deadline: .now + .seconds(60))
                failures.append(nil)
            } catch {
                failures.append(error)
            }
            sizes.append((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? -1)
        }
        #expect(SVGRenderer.fileSize(maximumPixels: 1) == (1 << 20) + 6)
        #expect(failures[0]?.code == .storeFailed, "\(String(describing: failures[0]))")
        #expect(
            failures[0]?.detail.contains(String(cString: strerror(EFBIG))) == true, "\(String(describing: failures[0]))"
        )
        #expect(sizes[0] <= (1 << 20) + 6, "\(sizes)")
        #expect(failures[1] == nil, "\(String(describing: failures[1]))")
        #expect(sizes[1] > (1 << 20) + 6, "\(sizes)")
    }

    @Test("the child's request and report read back as written; anything else is none")
    func wire() {
        let request = SVGRendererChild.Request(
            input: "/tmp/a b=c/x.svg", format: .png, maximumSide: 1440, quality: 85, addressSpace: 1 << 31,
            cpuSeconds: 7, fileSize: 1 << 28, parent: 42)
        #expect(SVGRendererChild.Request(words: request.words) == request)
        var probing = request
        probing.probe = true
        #expect(SVGRendererChild.Request(words: probing.words) == probing)
        var unbounded = request
        unbounded.maximumSide = nil
        #expect(SVGRendererChild.Request(words: unbounded.words) == unbounded)
        #expect(SVGRendererChild.Request(words: ["input=/x"]) == nil)
        #expect(SVGRendererChild.Request(words: request.words.map { $0 == "format=png" ? "format=webp" : $0 }) == nil)
        for report in [
            SVGRendererChild.Report.converted(ImageSize(width: 3, height: 4)),
            .failed(TransformFailure(.transformFailed, "libvips said:\nno; twice")),
        ] {
            #expect(SVGRendererChild.Report(report.bytes) == report)
        }
        // What the parent passes on of a failure's detail: printable, at most 512 bytes (whole characters).
        #expect(SVGRenderer.bounded("libvips said:\nno; twice") == "libvips said:; no; twice")
        #expect(SVGRenderer.bounded("a\u{0}b\u{1B}[2Jc\u{202E}d") == "a?b?[2Jc?d")
        let long = SVGRenderer.bounded(String(repeating: "é", count: 1000))
        #expect(long.utf8.count == 511 && long == String(repeating: "é", count: 254) + "...")
        let exact = String(repeating: "x", count: SVGRenderer.maximumDetail)
        #expect(SVGRenderer.bounded(exact) == exact)
        #expect(SVGRenderer.bounded(exact + "y") == String(exact.dropLast(3)) + "...")
        let stored = TransformFailure(.storeFailed, "write: File too large")
        #expect(SVGRenderer.passedOn(stored) == stored)
        let unknown = TransformFailure(EnrichmentProblem.Code(rawValue: String(repeating: "k", count: 9000)), "x")
        #expect(SVGRenderer.passedOn(unknown) == TransformFailure(.transformFailed, "x"))
        #expect(SVGRendererChild.Report([]) == nil)
        #expect(SVGRendererChild.Report(Array("ok 3".utf8)) == nil)
        #expect(SVGRenderer.addressSpace(maximumPixels: 50_000_000) == (1 << 30) + 800_000_000)
        #expect(SVGRenderer.addressSpace(maximumPixels: Int.max) == Int.max)
        #expect(SVGRenderer.fileSize(maximumPixels: 50_000_000) == (1 << 20) + 300_000_000)
        #expect(SVGRenderer.fileSize(maximumPixels: Int.max) == Int.max)
    }
}
