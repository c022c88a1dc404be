import FixtureOrigin
import Foundation
import RichPushTransform
import Testing

@testable import RichPush

@Suite("explain: why is there no image?")
struct ExplainTests {
    @Test(
        """
        the text output escapes what a payload, an origin or a store put there: a forged line, an escape sequence, \
        a bidirectional override stay visible in their line
        """)
    func controlCharacters() async throws {
        let bed = try TestBed()
        // OneSignal's att: the key is the field's name, the URL the reference.
        let payload = try PushPayload(
            parsing: Array(
                #"""
                {"aps":{"mutable-content":1},"att":{"k\n  fake line: would attach\u001b[2J\u202e":
                "\#(bed.url("/status/404"))?\u0007"}}
                """#.utf8))
        try await withEnricher(bed.configuration) { enricher in
            let text = await enricher.explain(payload, deadline: .now + .seconds(20)).text(input: "p.json")
            #expect(text.contains(#"att.k\u{A}  fake line: would attach\u{1B}[2J\u{202E} "#), "\(text)")
            #expect(text.contains(#"?\u{7}"#), "\(text)")
            #expect(!text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "\(text)")
            #expect(!text.contains("\n  fake line"))
            let preflight = await enricher.preflight(payload, deadline: .now + .seconds(20)).text(input: "p.json")
            #expect(preflight.contains(#"\u{A}  fake line"#), "\(preflight)")
            #expect(!preflight.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "\(preflight)")
        }
        #expect(TerminalText.printable("plain é 日本") == "plain é 日本")
        #expect(TerminalText.printable("a\tb\r\u{85}\u{2028}\u{2066}") == #"a\u{9}b\u{D}\u{85}\u{2028}\u{2066}"#)
    }

    @Test("the text shows a URL whole up to 300 characters, a longer one by its start and length; the JSON whole")
    func longURL() {
        let long = "https://example.com/" + String(repeating: "a", count: 1000) + ".jpg"
        let explanation = Explanation(
            mutable: true, format: PayloadFormat.detect(PushPayload(JSONObject([]))),
            conventions: [
                .init(
                    name: "acme",
                    findings: [
                        .init(
                            reference: MediaReference(url: long, convention: "acme", identifier: "acme", field: "acme"),
                            verdict: .refuse(.badURL, "too long"))
                    ], problems: [])
            ])
        let text = explanation.text(input: "p.json")
        #expect(text.contains("acme " + long.prefix(240) + "... (1024 bytes in all)\n"), "\(text)")
        #expect(!text.contains(long.prefix(241)))
        #expect(Explanation.shown(String(long.prefix(300))) == String(long.prefix(300)))
        #expect(JSONWriter.string(explanation.json(input: "p.json")).contains(long))
    }

    @Test("each reference gets a verdict from headers and first bytes, and nothing is stored")
    func verdicts() async throws {
        let bed = try TestBed()
        try await withEnricher(bed.configuration) { enricher in
            let payload = try bed.payload(
                #"""
                {"aps":{"alert":"x"},"adb_media":"ORIGIN/media/clip.mp4",
                 "payload":{"image_attachment":"ORIGIN/media/error-page.html?type=image/jpeg"},
                 "fcm_options":{"image":"ORIGIN/media/clip.mp4"},"att":{"a":"ORIGIN/status/404","b":7},
                 "ct_mediaUrl":"ORIGIN/generated?prefix=photo.jpg&bytes=20000000&nolength=1"}
                """#)
            let explanation = await enricher.explain(payload, deadline: .now + .seconds(30))
            #expect(!explanation.mutable)
            let byName = Dictionary(uniqueKeysWithValues: explanation.conventions.map { ($0.name, $0) })
            #expect(byName["adb_media"]?.findings.first?.verdict == .attach(.mp4, bytes: fixture("clip.mp4").count))
            guard case .refuse(let code, let detail)? = byName["zego"]?.findings.first?.verdict else {
                Issue.record("zego: \(String(describing: byName["zego"]?.findings))")
                return
            }
            #expect(code == .unsupportedType)
            #expect(detail.contains("text/html"))
            #expect(byName["fcm"]?.findings.first?.verdict == .duplicate(of: "adb_media"))
            #expect(
                byName["onesignal"]?.findings.first.map {
                    if case .refuse(.httpStatus, _) = $0.verdict { true } else { false }
                } == true)
            #expect(byName["onesignal"]?.problems.map(\.code) == [.badReference])
            // A 20 MB image without a length: the probe stops after the first bytes, so the cap is not reached.
            #expect(
                byName["clevertap"]?.findings.first.map {
                    if case .attach(.jpeg, _) = $0.verdict { true } else { false }
                } == true)
            #expect(byName["airship"]?.matched == false)
            #expect(bed.entriesOnDisk().isEmpty)
            #expect(bed.cacheFiles().isEmpty)
            let text = explanation.text(input: "p.json")
            #expect(text.contains("would attach: public.mpeg-4"))
            #expect(text.contains("would NOT attach: unsupported-type"))
            #expect(text.contains("the service extension would not run"))
            #expect(text.contains("not present: airship"))
        }
    }

    @Test("the CLI prints text by default and JSON with --json; invalid input exits 1")
    func cli() async throws {
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let good = try bed.payloadFile("airship.json", directory: directory)
        let bad = try bed.payloadFile("invalid/not-json.json", directory: directory)
        let text = try await CLI.run(["explain"] + bed.cliOptions + [good])
        #expect(text.status == 0)
        #expect(text.stdout.contains("airship:"))
        #expect(text.stdout.contains("would attach: com.compuserve.gif"))
        let json = try await CLI.run(["explain", "--json"] + bed.cliOptions + [good, bad])
        #expect(json.status == 1)
        #expect(json.lines.count == 2)
        let conventions = json.lines.first?["conventions"] as? [[String: Any]]
        #expect(conventions?.map { $0["name"] as? String } == ["airship"])
        let references = conventions?.first?["references"] as? [[String: Any]]
        #expect(references?.map { $0["verdict"] as? String } == ["attach", "attach"])
        #expect((json.lines.last?["invalid"] as? [String: Any])?["code"] as? String == "not-json")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: bed.attachments)) ?? []).isEmpty)
    }

    /// The first reference of `explain --json`'s line for one payload: its JSON members.
    static func firstReference(_ run: CLI.Run) -> [String: Any]? {
        ((run.lines.first?["conventions"] as? [[String: Any]])?.first?["references"] as? [[String: Any]])?.first
    }

    /// Writes a payload whose one reference, `adb_media`, is `url` to `path`; the path.
    static func adobePayloadFile(_ url: String, _ path: String) throws -> String {
        try Data(#"{"aps":{"mutable-content":1},"adb_media":"\#(url)"}"#.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The first problem of `enrich`'s result for one payload.
    static func firstProblem(_ run: CLI.Run) -> [String: Any]? {
        (run.lines.first?["problems"] as? [[String: Any]])?.first
    }

    @Test(
        """
        explain answers what enrich does: a 100-megapixel PNG is refused as too-many-pixels by both, naming \
        --max-pixels; a reference that fails with 503 is a retry (not "would NOT attach"), and enrich's retry \
        attaches it
        """)
    func agreesWithEnrich() async throws {
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let huge = try Self.adobePayloadFile(bed.url("/media/plain-100mp.png"), directory + "/huge.json")
        let explained = try await CLI.run(["explain", "--json"] + bed.cliOptions + [huge])
        let verdict = try #require(Self.firstReference(explained), "\(explained.stdout) \(explained.stderr)")
        #expect(verdict["verdict"] as? String == "refuse")
        #expect(verdict["code"] as? String == "too-many-pixels")
        #expect((verdict["detail"] as? String)?.hasSuffix("(--max-pixels)") == true, "\(verdict)")
        let enriched = try await CLI.run(["enrich"] + bed.cliOptions + [huge])
        #expect(Self.firstProblem(enriched)?["code"] as? String == "too-many-pixels")
        #expect(Self.firstProblem(enriched)?["detail"] as? String == verdict["detail"] as? String)

        let flaky = try Self.adobePayloadFile(bed.url("/fail-first/3/503/photo.jpg"), directory + "/flaky.json")
        let retried = try await CLI.run(["explain", "--json"] + bed.cliOptions + [flaky])
        let retry = try #require(Self.firstReference(retried), "\(retried.stdout) \(retried.stderr)")
        #expect(retry["verdict"] as? String == "retry")
        #expect(retry["code"] as? String == "http-status")
        #expect(retry["retries"] as? Int == 2)
        let text = try await CLI.run(["explain"] + bed.cliOptions + [flaky])
        #expect(!text.stdout.contains("would NOT attach"), "\(text.stdout)")
        #expect(text.stdout.contains("enrich tries again, up to 2 times"), "\(text.stdout)")
        // The route fails its first three requests: the two explains' and enrich's first; enrich's retry attaches it.
        let attached = try await CLI.run(["enrich"] + bed.cliOptions + [flaky])
        #expect(attached.lines.first?["outcome"] as? String == "complete", "\(attached.stdout)")
        let attachment = (attached.lines.first?["attachments"] as? [[String: Any]])?.first
        #expect(attachment?["attempts"] as? Int == 2, "\(attached.stdout)")
    }

    @Test(
        """
        explain refuses as too-many-pixels, in enrich's words, what enrich refuses for what the file's structure \
        declares and its header does not (a GIF's logical screen, an APNG's frames), and what libvips's header says \
        of a GIF (its first frame's extent, beyond a small screen)
        """,
        arguments: [
            ("screen.gif", TransformStepTests.gif(screen: 60000, frame: 10), "60000 x 60000 pixels;"),
            ("many.png", TransformStepTests.apng(side: 2000, frames: 40), "2000 x 2000 pixels x 40 frames;"),
            ("gif-huge-screen.gif", fixture("corpus/gif-huge-screen.gif"), "65535 x 65535 pixels;"),
            ("frame.gif", TransformStepTests.gif(screen: 10, frame: 60000), "60000 x 60000 pixels;"),
        ] as [(String, [UInt8], String)])
    func declaredPixels(name: String, bytes: [UInt8], detail: String) async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + name))
        let bed = try TestBed(media: directory)
        let payload = try Self.adobePayloadFile(bed.url("/media/\(name)"), directory + "/payload.json")
        let explained = try await CLI.run(["explain", "--json"] + bed.cliOptions + [payload])
        let verdict = try #require(Self.firstReference(explained), "\(explained.stdout) \(explained.stderr)")
        #expect(verdict["verdict"] as? String == "refuse", "\(verdict)")
        #expect(verdict["code"] as? String == "too-many-pixels")
        #expect((verdict["detail"] as? String)?.contains(detail) == true, "\(verdict)")
        let enriched = try await CLI.run(["enrich"] + bed.cliOptions + [payload])
        #expect(Self.firstProblem(enriched)?["code"] as? String == "too-many-pixels")
        #expect(Self.firstProblem(enriched)?["detail"] as? String == verdict["detail"] as? String)
    }

    /// A HEIC's or AVIF's `ispe` says 60 x 60 over a 160 x 120 frame (`TransformStepTests.heifSizeLie`), and a
    /// `free` box of 64 KB after its data puts its end past the probe's first bytes: explain reads the frame's
    /// sequence header (HEVC's in the `hvcC` property, AV1's at the start of the item's data) in them, with one
    /// request; with `metaPadding` bytes more in its `meta` box, past the sniffing window (4 KB) and curl's pieces
    /// (16 KiB), in the first bytes it asks for again as the boxes say: the `meta` box whole, then the item's first
    /// data after it.
    @Test(
        "explain refuses as too-many-pixels, in enrich's words, a HEIC or AVIF whose coded frame exceeds its ispe",
        arguments: [
            ("photo.heic", "HEVC", 0, 1), ("photo.avif", "AV1", 0, 1), ("photo.heic", "HEVC", 40_000, 3),
            ("photo.avif", "AV1", 40_000, 3),
        ])
    func codedPixels(name: String, codec: String, metaPadding: Int, probes: Int) async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let free = [0, 1, 0, 8].map(UInt8.init) + Array("free".utf8) + [UInt8](repeating: 0, count: 65_536)
        var file = ImageWriters.heif(fixture(name), ispe: 60, 60)
        if metaPadding > 0 { file = ImageWriters.heif(file, metaPadding: metaPadding) }
        try Data(file + free).write(to: URL(fileURLWithPath: directory + "/lying-" + name))
        let bed = try TestBed(media: directory)
        let payload = try Self.adobePayloadFile(bed.url("/media/lying-" + name), directory + "/payload.json")
        let options = bed.cliOptions + ["--max-pixels", "10000"]
        let explained = try await CLI.run(["explain", "--json"] + options + [payload])
        let verdict = try #require(Self.firstReference(explained), "\(explained.stdout) \(explained.stderr)")
        #expect(verdict["verdict"] as? String == "refuse", "\(verdict)")
        #expect(verdict["code"] as? String == "too-many-pixels")
        #expect(
            (verdict["detail"] as? String)?.contains(
                "decodes 19200 pixels in its coded frame (the largest: item 1, 160 x 120 by its \(codec) sequence "
                    + "header) where its header declares 60 x 60") == true, "\(verdict)")
        #expect(bed.origin.requestLog == Array(repeating: "/media/lying-" + name, count: probes))
        let enriched = try await CLI.run(["enrich"] + options + [payload])
        #expect(Self.firstProblem(enriched)?["code"] as? String == "too-many-pixels")
        #expect(Self.firstProblem(enriched)?["detail"] as? String == verdict["detail"] as? String)
    }

    /// What a probe keeps once judged: the first answer's 4 KB, however many more bytes the HEIF's boxes asked for;
    /// the frames counted over all of them. (`explain` keeps a payload's probes until all are in, `serve` many
    /// payloads'.)
    @Test("a HEIF probed past its first 4 KB is judged over all it read, then keeps 4 KB")
    func codedPixelsProbeKeepsWindow() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = ImageWriters.heif(ImageWriters.heif(fixture("photo.heic"), ispe: 60, 60), metaPadding: 40_000)
        try Data(file).write(to: URL(fileURLWithPath: directory + "/long-meta.heic"))
        try Data(fixture("photo.jpg")).write(to: URL(fileURLWithPath: directory + "/photo.jpg"))
        let bed = try TestBed(media: directory) {
            $0.transform.converter = VipsConverter()
            $0.transform.maximumPixels = 10_000
        }
        try await withFetcher(bed.configuration) { fetcher in
            // A deadline no loaded machine reaches: the probe's three asks share it (a stalled run once spent 9 s of
            // 10 before the second).
            let found = try await fetcher.probe(bed.url("/media/long-meta.heic"), deadline: .now + .seconds(60)).get()
            #expect(found.type == .heic)
            #expect(found.head == Array(file.prefix(4096)))
            #expect(found.codedPixelRefusal?.code == .tooManyPixels, "\(String(describing: found.codedPixelRefusal))")
            let jpeg = try await fetcher.probe(bed.url("/media/photo.jpg"), deadline: .now + .seconds(60)).get()
            #expect(jpeg.codedPixelRefusal == nil)
        }
        #expect(bed.origin.requestLog.filter { $0 == "/media/long-meta.heic" }.count == 3)
    }

    /// A HEIF whose `meta` box is longer than the window, sent without a declared length: dripped 4 KB at a time (so
    /// that the first answer's bytes are all that came, as many as were seen), and endless (200 MB: a probe that did
    /// not stop at the bytes it asked for would reach the largest cap and fail).
    @Test("a HEIF without a declared length is asked for again whatever came first, and each ask stops at its bytes")
    func codedPixelsWithoutLength() async throws {
        let file = ImageWriters.heif(ImageWriters.heif(fixture("photo.heic"), ispe: 60, 60), metaPadding: 40_000)
        let origin = try HTTPOrigin { request in
            request.path == "/drip.heic"
                ? HTTPOrigin.Response(body: .drip(file, chunkSize: 4096, interval: .milliseconds(20)), omitLength: true)
                : HTTPOrigin.Response(body: .generated(prefix: file, total: 200_000_000), omitLength: true)
        }
        defer { origin.stop() }
        let bed = try TestBed {
            $0.transform.converter = VipsConverter()
            $0.transform.maximumPixels = 10_000
        }
        try await withFetcher(bed.configuration) { fetcher in
            for path in ["/drip.heic", "/endless.heic"] {
                let found = try await fetcher.probe(origin.url(path), deadline: .now + .seconds(30)).get()
                #expect(found.codedPixelRefusal?.code == .tooManyPixels, "\(path)")
                #expect(found.head == Array(file.prefix(4096)), "\(path)")
            }
        }
        #expect(
            origin.requestLog == Array(repeating: "/drip.heic", count: 3) + Array(repeating: "/endless.heic", count: 3))
    }

    /// `heif-split-sps.heic` (Fixtures/media/make-heif-split.py): its item's second extent, in the first 4 KB, holds
    /// a 16,000 x 16,000 SPS that the whole file's stream hides inside the first extent's last unit (past the 4 KB).
    /// explain reads the extents in order and stops at the one past its bytes: it says what enrich does.
    @Test("explain reads a HEIF item's extents as a prefix of its stream: an SPS the whole stream hides is not counted")
    func codedPixelsPrefix() async throws {
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let payload = try Self.adobePayloadFile(bed.url("/media/heif-split-sps.heic"), directory + "/payload.json")
        let explained = try await CLI.run(["explain", "--json"] + bed.cliOptions + [payload])
        let verdict = try #require(Self.firstReference(explained), "\(explained.stdout) \(explained.stderr)")
        #expect(verdict["verdict"] as? String == "attach", "\(verdict)")
        let enriched = try await CLI.run(["enrich"] + bed.cliOptions + [payload])
        #expect(enriched.lines.first?["outcome"] as? String == "complete", "\(enriched.stdout)")
    }

    @Test(
        """
        a refusal a setting would lift names the CLI's option to the CLI's user (--allow-http, --allow-port), the \
        configuration field to the library's
        """)
    func refusalsNameTheirSetting() async throws {
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let payload = try Self.adobePayloadFile(bed.url("/media/photo.jpg"), directory + "/p.json")
        var withoutHTTP = bed.cliOptions
        withoutHTTP.removeAll { $0 == "--allow-http" }
        let http = try await CLI.run(["enrich"] + withoutHTTP + [payload])
        #expect(Self.firstProblem(http)?["detail"] as? String == "http is not allowed (only https; see --allow-http)")
        var withoutPorts = bed.cliOptions
        let ports = try #require(withoutPorts.firstIndex(of: "--allow-port"))
        withoutPorts.removeSubrange(ports...ports + 1)
        let port = try await CLI.run(["explain", "--json"] + withoutPorts + [payload])
        #expect(
            Self.firstReference(port)?["detail"] as? String
                == "port \(bed.origin.port) is not allowed (see --allow-port)")
        var configuration = bed.configuration
        configuration.network.allowHTTP = false
        let result = try await withEnricher(configuration) { enricher in
            await enricher.enrich(TestBed.adobePayload(bed.url("/media/photo.jpg")), timeout: .seconds(30))
        }
        #expect(result.problems.first?.detail == "http is not allowed (only https; see network.allowHTTP)")
    }

    @Test("explain names each reference by the identifier enrich gives it: a second adb_media is adb_media-2")
    func identifiers() async throws {
        let bed = try TestBed()
        let text =
            #"{"aps":{"alert":"a","mutable-content":1},"adb_media":"ORIGIN/media/photo.jpg","#
            + #""att":{"adb_media":"ORIGIN/media/logo.png"}}"#
        try await withEnricher(bed.configuration) { enricher in
            let explanation = await enricher.explain(try bed.payload(text), deadline: .now + .seconds(20))
            let result = await enricher.enrich(try bed.payload(text), timeout: .seconds(30))
            #expect(result.attachments.map(\.identifier) == ["adb_media", "adb_media-2"])
            #expect(
                explanation.conventions.flatMap(\.findings).map(\.reference.identifier) == ["adb_media", "adb_media-2"])
        }
    }

    @Test(
        """
        a Swrve fallback is probed when its URL would not attach, on the finding that names it, also when another \
        convention named the URL first; not when the URL attaches
        """)
    func fallback() async throws {
        let bed = try TestBed()
        let failing =
            #"{"aps":{"alert":"a","mutable-content":1},"adb_media":"ORIGIN/status/404","#
            + #""_sw":{"media":{"url":"ORIGIN/status/404","fallback_url":"ORIGIN/media/photo.jpg"}}}"#
        let working = failing.replacingOccurrences(of: "ORIGIN/status/404", with: "ORIGIN/media/logo.png")
        try await withEnricher(bed.configuration) { enricher in
            let explanation = await enricher.explain(try bed.payload(failing), deadline: .now + .seconds(20))
            let findings = explanation.conventions.flatMap(\.findings)
            #expect(findings.map(\.reference.convention) == ["adb_media", "swrve"])
            #expect(findings.first?.fallback == nil)
            guard case .attach(let type, _)? = findings.last?.fallback else {
                Issue.record("no fallback verdict: \(findings)")
                return
            }
            #expect(type == .jpeg)
            let text = explanation.text(input: "p.json")
            #expect(text.contains("its fallback _sw.media.fallback_url"), "\(text)")
            #expect(text.contains("fetched when it fails: would attach: public.jpeg"), "\(text)")
            let json = JSONWriter.string(explanation.json(input: "p.json"))
            #expect(json.contains(#""fallback":{"field":"_sw.media.fallback_url","url":"#), "\(json)")
            let attached = await enricher.explain(try bed.payload(working), deadline: .now + .seconds(20))
            #expect(attached.conventions.flatMap(\.findings).allSatisfy { $0.fallback == nil })
        }
    }

    @Test("every member explain --json writes, at any depth, and every verdict, is in docs/cli.md's table of them")
    func jsonDocumented() async throws {
        let bed = try TestBed()
        let readme = try String(contentsOfFile: FixtureDirectory.root + "/../docs/cli.md", encoding: .utf8)
        let start = try #require(readme.range(of: "per payload with `--json`:"))
        let table = readme[start.upperBound...].split(separator: "\n\n").first.map(String.init) ?? ""
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let payload = directory + "/all.json"
        // attach (and transcoded), refuse, duplicate, retry, a convention's problem; then an input that is not one.
        let text = #"""
            {"aps":{"mutable-content":1},"adb_media":"ORIGIN/media/banner.webp",
             "fcm_options":{"image":"ORIGIN/media/banner.webp"},
             "payload":{"image_attachment":"ORIGIN/media/error-page.html?type=image/jpeg"},
             "att":{"a":"ORIGIN/fail-first/1/503/photo.jpg","b":7},
             "_sw":{"media":{"url":"ORIGIN/status/404","fallback_url":"ORIGIN/media/photo.jpg"}}}
            """#
        try Data(text.replacingOccurrences(of: "ORIGIN", with: bed.url("")).utf8).write(
            to: URL(fileURLWithPath: payload))
        let invalid = try bed.payloadFile("invalid/not-json.json", directory: directory)
        let run = try await CLI.run(["explain", "--json"] + bed.cliOptions + [payload, invalid])
        var keys: Set<String> = []
        var verdicts: Set<String> = []
        func collect(_ value: Any) {
            if let object = value as? [String: Any] {
                for (key, member) in object {
                    keys.insert(key)
                    if key == "verdict", let verdict = member as? String { verdicts.insert(verdict) }
                    collect(member)
                }
            } else if let array = value as? [Any] {
                array.forEach(collect)
            }
        }
        run.lines.forEach(collect)
        #expect(verdicts == ["attach", "refuse", "duplicate", "retry"], "\(run.stdout)")
        #expect(
            keys.isSuperset(of: ["transcoded", "of", "retries", "invalid", "problems", "source", "fallback"]),
            "\(keys)")
        for key in keys {
            #expect(
                table.contains("`\(key)`") || table.contains("\"\(key)\""),
                "explain --json writes \(key), which docs/cli.md omits")
        }
        for verdict in verdicts { #expect(table.contains(#""verdict": "\#(verdict)""#), "\(verdict)") }
    }

    @Test("explain makes no attachments root: a missing one stays missing, and the scratch one it used is gone")
    func makesNoRoot() async throws {
        let bed = try TestBed()
        let base = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let payload = try Self.adobePayloadFile(bed.url("/media/photo.jpg"), base + "/p.json")
        let arguments =
            ["explain", "--json"] + bed.networkOptions + ["--attachments-dir", base + "/missing/root", payload]
        // TMPDIR, where the scratch directory goes, is this test's own directory: what is left there is seen.
        let run = try await offPool {
            try CLI.runBlocking(arguments, stdin: nil, prefix: ["/usr/bin/env", "TMPDIR=" + base])
        }
        #expect(run.status == 0, "\(run.stderr)")
        #expect(Self.firstReference(run)?["verdict"] as? String == "attach", "\(run.stdout)")
        #expect(entries(base) == ["p.json"])
    }

    @Test("an FCM v1 message is explained as enrich reads it: its own fields per platform, then apns.payload's")
    func fcmMessage() async throws {
        let bed = try TestBed()
        let message = try bed.fcmMessageWithVideoForAndroid(
            apns: #"{"payload":{"aps":{"mutable-content":1},"adb_media":"URL"}}"#)
        let explanation = try await withEnricher(bed.configuration) { enricher in
            await enricher.explain(message, deadline: .now + .seconds(30))
        }
        #expect(explanation.format == PayloadFormat(.fcmV1, wrapped: true, decidedBy: "message.apns"))
        #expect(explanation.mutable)
        // Its notification has an image and no title or body, its APNs payload no alert: iOS shows no alert.
        #expect(!explanation.alert)
        let matched = explanation.conventions.filter(\.matched)
        #expect(matched.map(\.name) == ["fcm_v1", "adb_media"])
        let own = try #require(matched.first).findings
        #expect(own.map(\.reference.field) == ["message.notification.image", "message.android.notification.image"])
        #expect(own.map(\.reference.platform) == [.ios, .android])
        #expect(own.first?.verdict == .attach(.jpeg, bytes: 5905))
        guard case .refuse(let code, let detail)? = own.last?.verdict else {
            Issue.record("Android's video not refused: \(String(describing: own.last?.verdict))")
            return
        }
        #expect(code == .unsupportedType)
        #expect(detail.contains("neither video nor audio"))
        #expect(matched.last?.findings.map(\.reference.field) == ["message.apns.payload.adb_media"])
        let lines = explanation.text(input: "m.json")
        #expect(lines.hasPrefix("m.json (an FCM v1 message, decided by message.apns)\n"))
        #expect(
            lines.contains(
                "  message.apns.payload.aps.mutable-content is 1, but there is no alert (no message.notification title "
                    + "or body, no apns.payload.aps.alert): iOS runs no service extension without one\n"), "\(lines)")
        // With a title, it shows one, and the extension runs.
        let text = JSONWriter.string(message.json)
        #expect(text.contains(#""notification":{"#))
        let titled = try PushPayload(
            parsing: Array(
                text.replacingOccurrences(of: #""notification":{"#, with: #""notification":{"title":"Sale","#).utf8))
        let shown = try await withEnricher(bed.configuration) { enricher in
            await enricher.explain(titled, deadline: .now + .seconds(30))
        }
        #expect(shown.alert)
        #expect(
            shown.text(input: "m.json").contains(
                "  message.apns.payload.aps.mutable-content is 1: the service extension runs\n"))
        #expect(lines.contains("    message.android.notification.image (android) "))
    }
}

extension ExplainTests {
    @Test(
        """
        an FCM message's Android reference is explained as enrich attaches it: a variant made (a GIF, a WebP, an \
        EXIF orientation), or with no converter the refusal enrich reports; past the limit the Android one is \
        dropped, as enrich drops it; a URL both platforms read is probed once
        """,
        arguments: [true, false])
    func androidAgreesWithEnrich(converter: Bool) async throws {
        let bed = try TestBed { configuration in
            if converter { configuration.transform.converter = VipsConverter() }
        }
        func message(_ body: String) throws -> PushPayload {
            try PushPayload(parsing: Array(#"{"message":{"token":"t",\#(body)}}"#.utf8))
        }
        let ios = (0..<8).map { #""\#($0)":"\#(bed.url("/media/logo.png?n=" + String($0)))""# }
            .joined(separator: ",")
        let messages = try [
            message(#""android":{"notification":{"image":"\#(bed.url("/media/anim.gif"))"}}"#),
            message(#""android":{"notification":{"image":"\#(bed.url("/media/banner.webp"))"}}"#),
            message(#""notification":{"image":"\#(bed.url("/media/photo-exif.jpg"))"}"#),
            message(#""android":{"notification":{"image":"\#(bed.url("/media/clip.mp4"))"}}"#),
            message(
                #""android":{"notification":{"image":"\#(bed.url("/media/photo.jpg"))"}},"#
                    + #""apns":{"payload":{"aps":{"mutable-content":1},"att":{\#(ios)}}}"#),
            // Its first request fails: both platforms are told of that one probe.
            message(#""notification":{"image":"\#(bed.url("/fail-first/1/503/photo.jpg"))"}"#),
        ]
        var variants = 0
        try await withEnricher(bed.configuration) { enricher in
            for message in messages {
                let explanation = await enricher.explain(message, deadline: .now + .seconds(20))
                let findings = explanation.conventions.flatMap(\.findings)
                var explained: [String] = []
                for finding in findings {
                    switch finding.verdict {
                    case .attach: explained.append(finding.androidVariant == nil ? "attach" : "attach variant")
                    case .refuse(let code, _): explained.append(code.rawValue)
                    case .retry(let code, _, _): explained.append("retry \(code)")
                    case .duplicate: explained.append("duplicate")
                    case .beyondLimit: explained.append("too-many-references")
                    }
                }
                if explained.allSatisfy({ !$0.hasPrefix("retry") }) {
                    let result = await enricher.enrich(message, timeout: .seconds(20))
                    let enriched = findings.map { finding in
                        let reference = finding.reference
                        if let attachment = result.attachments.first(where: {
                            $0.field == reference.field && $0.platform == reference.platform
                        }) {
                            let variant = attachment.platform == .android && attachment.media.transformation != nil
                            return variant ? "attach variant" : "attach"
                        }
                        let problem = result.problems.first {
                            ($0.source == reference.url || $0.source == reference.field)
                                && $0.platform == reference.platform
                        }
                        return problem?.code.rawValue ?? "none"
                    }
                    #expect(explained == enriched, "\(findings.map(\.reference.field)) \(result.problems)")
                } else {
                    #expect(explained == ["retry http-status", "retry http-status"], "\(findings)")
                }
                variants += explained.filter { $0 == "attach variant" }.count
            }
        }
        #expect(variants == (converter ? 3 : 0))
    }

    @Test("explain of an FCM message with nothing for iOS does not warn that iOS's extension would not run")
    func androidOnlyNotMutable() async throws {
        let bed = try TestBed()
        let android = #""android":{"notification":{"image":"\#(bed.url("/media/photo.jpg"))"}}"#
        let message = try PushPayload(parsing: Array(#"{"message":{"token":"t",\#(android)}}"#.utf8))
        let text = try await withEnricher(bed.configuration) { enricher in
            await enricher.explain(message, deadline: .now + .seconds(20)).text(input: "m.json")
        }
        let field = "message.apns.payload.aps.mutable-content"
        #expect(text.contains("  \(field) is not 1, and nothing is for iOS: no matter\n"), "\(text)")
        #expect(!text.contains("would not run"), "\(text)")
    }
}
