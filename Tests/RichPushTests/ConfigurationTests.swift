import FixtureOrigin
import Foundation
import Testing

@testable import RichPush

@Suite("Enricher.Configuration: validated in the library, each error naming its field")
struct ConfigurationTests {
    /// A wrong value for each field that can be wrong, the field's path, and the code.
    static let wrong:
        [(change: @Sendable (inout Enricher.Configuration) -> Void, field: String, code: EnrichmentProblem.Code)] = [
            ({ $0.timeout = .zero }, "timeout", .outOfRange),
            ({ $0.timeout = .seconds(86_401) }, "timeout", .outOfRange),
            ({ $0.network.maximumRedirects = -1 }, "network.maximumRedirects", .outOfRange),
            ({ $0.network.connectTimeout = .seconds(-1) }, "network.connectTimeout", .outOfRange),
            ({ $0.network.lowSpeedBytesPerSecond = -1 }, "network.lowSpeedBytesPerSecond", .outOfRange),
            ({ $0.network.lowSpeedWindow = .milliseconds(500) }, "network.lowSpeedWindow", .outOfRange),
            ({ $0.network.allowedPorts.append(0...80) }, "network.allowedPorts[1]", .outOfRange),
            ({ $0.network.allowedPorts = [443...70_000] }, "network.allowedPorts[0]", .outOfRange),
            ({ $0.network.resolve = ["a.test:443:127.0.0.1", "a.test:443"] }, "network.resolve[1]", .malformed),
            ({ $0.network.resolve = ["a.test:0:127.0.0.1"] }, "network.resolve[0]", .malformed),
            ({ $0.network.resolve = ["a.test:443:127.0.0.1,nope"] }, "network.resolve[0]", .malformed),
            ({ $0.network.resolve = [":443:127.0.0.1"] }, "network.resolve[0]", .malformed),
            ({ $0.network.caBundle = "/nonexistent.pem" }, "network.caBundle", .unreadable),
            ({ $0.network.caBundle = "/" }, "network.caBundle", .unreadable),
            // A JPEG given as the CA bundle: no certificate in it.
            (
                { $0.network.caBundle = FixtureRoutes.fixturesDirectory + "/media/photo.jpg" }, "network.caBundle",
                .malformed
            ),
            ({ $0.network.maximumURLLength = 0 }, "network.maximumURLLength", .outOfRange),
            ({ $0.network.maximumConnections = 0 }, "network.maximumConnections", .outOfRange),
            ({ $0.network.maximumConnectionsPerHost = -3 }, "network.maximumConnectionsPerHost", .outOfRange),
            ({ $0.network.userAgent = "RichPush\r\nX-Evil: 1" }, "network.userAgent", .malformed),
            ({ $0.limits.imageBytes = 0 }, "limits.imageBytes", .outOfRange),
            ({ $0.limits.audioBytes = -5 }, "limits.audioBytes", .outOfRange),
            ({ $0.limits.videoBytes = 0 }, "limits.videoBytes", .outOfRange),
            ({ $0.limits.sniffBytes = 0 }, "limits.sniffBytes", .outOfRange),
            ({ $0.limits.heldBodyBytes = -1 }, "limits.heldBodyBytes", .outOfRange),
            ({ $0.limits.heldBytes = (1 << 30) + 1 }, "limits.heldBytes", .outOfRange),
            ({ $0.limits.maximumHeaderBytes = 0 }, "limits.maximumHeaderBytes", .outOfRange),
            ({ $0.limits.maximumReferences = -1 }, "limits.maximumReferences", .outOfRange),
            ({ $0.limits.maximumReferences = 0 }, "limits.maximumReferences", .outOfRange),
            ({ $0.limits.payload.maximumBytes = 0 }, "limits.payload.maximumBytes", .outOfRange),
            ({ $0.limits.payload.maximumDepth = 100_000 }, "limits.payload.maximumDepth", .outOfRange),
            ({ $0.cache.timeToLive = .seconds(-1) }, "cache.timeToLive", .outOfRange),
            ({ $0.cache.maximumEntries = 0 }, "cache.maximumEntries", .outOfRange),
            ({ $0.cache.maximumBytes = 0 }, "cache.maximumBytes", .outOfRange),
            ({ $0.transform.maximumDimension = 15 }, "transform.maximumDimension", .outOfRange),
            ({ $0.transform.maximumSourceBytes = 9_999_999 }, "transform.maximumSourceBytes", .outOfRange),
            ({ $0.transform.maximumPixels = 0 }, "transform.maximumPixels", .outOfRange),
            ({ $0.transform.concurrency = 0 }, "transform.concurrency", .outOfRange),
            ({ $0.transform.jpegQuality = 101 }, "transform.jpegQuality", .outOfRange),
            ({ $0.transform.svgRenderer = "richpush" }, "transform.svgRenderer", .malformed),
            ({ $0.transform.svgRenderer = "/nonexistent/richpush" }, "transform.svgRenderer", .unreadable),
            ({ $0.transform.svgRenderer = "/usr/bin" }, "transform.svgRenderer", .unreadable),
            ({ $0.store = AttachmentStore(root: "relative/dir") }, "store.root", .malformed),
        ]

    @Test("Enricher.init throws ConfigurationError naming the wrong field", arguments: wrong.indices)
    func rejected(index: Int) throws {
        let (change, field, code) = Self.wrong[index]
        let bed = try TestBed()
        var configuration = bed.configuration
        change(&configuration)
        do {
            _ = try Enricher(configuration: configuration)
            Issue.record("\(field): accepted")
        } catch let error as ConfigurationError {
            #expect(error.field == field)
            #expect(error.code == code)
            #expect(!error.detail.contains("--"), "a library message names a flag: \(error.detail)")
        }
        // Nothing was started: the attachments root was not even made.
        #expect(!FileManager.default.fileExists(atPath: bed.attachments))
        #expect(throws: ConfigurationError.self) { try Fetcher(configuration: configuration) }
    }

    @Test(
        """
        network.caBundle is checked for a certificate before anything starts: a bundle through a link, or with its \
        first certificate across the reading's 64 KiB steps, is taken; a FIFO is refused at once, not waited on; a \
        file of no certificate is malformed
        """)
    func caBundleChecked() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let certificate = try makeCertificate(in: directory).certificate
        let pem = try String(contentsOfFile: certificate, encoding: .utf8)
        var configuration = Enricher.Configuration()
        func problem(_ path: String) -> ConfigurationError? {
            configuration.network.caBundle = path
            do {
                try configuration.validate()
                return nil
            } catch {
                return error
            }
        }
        let link = directory + "/link.pem"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: certificate)
        #expect(problem(link) == nil)
        // "-----BEGIN CERTIFICATE-----" from byte 65,526: its first 10 bytes in the first read, the rest in the next.
        let straddling = directory + "/straddling.pem"
        try Data((String(repeating: "#", count: 65_526) + "\n" + pem).utf8).write(to: URL(fileURLWithPath: straddling))
        #expect(problem(straddling) == nil)
        let fifo = directory + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(problem(fifo)?.code == .unreadable)
        #expect(problem(fifo)?.detail == "cannot read '\(fifo)': not a regular file")
        let text = directory + "/notes.txt"
        try Data(String(repeating: "CERTIFICATE-----\n", count: 10_000).utf8).write(to: URL(fileURLWithPath: text))
        #expect(problem(text)?.code == .malformed)
        #expect(problem(text)?.detail == "'\(text)' holds no PEM certificate (no BEGIN CERTIFICATE line)")
    }

    @Test("the defaults, the test bed's and the ends of each range are valid")
    func accepted() throws {
        try Enricher.Configuration().validate()
        var configuration = try TestBed().configuration
        try configuration.validate()
        configuration.timeout = .milliseconds(1)
        configuration.cache.timeToLive = .zero
        configuration.network.maximumRedirects = 0
        configuration.network.allowedPorts = [1...65535]
        configuration.network.resolve = ["a.test:65535:127.0.0.2,[::1]", "b.test:1:10.0.0.1"]
        configuration.limits.maximumReferences = 1
        configuration.transform.maximumDimension = 16
        configuration.transform.maximumSourceBytes = configuration.limits.imageBytes
        configuration.transform.maximumPixels = 1
        configuration.transform.concurrency = 64
        configuration.transform.jpegQuality = 1
        try configuration.validate()
    }

    @Test("limits.maximumReferences = -1 is refused at init instead of crashing at the first payload")
    func negativeReferences() async throws {
        var configuration = try TestBed().configuration
        configuration.limits.maximumReferences = -1
        #expect(
            throws: ConfigurationError(
                field: "limits.maximumReferences", code: .outOfRange, detail: "expected 1 or more, got -1")
        ) {
            try Enricher(configuration: configuration)
        }
    }

    @Test("a duration reads back as seconds, to the millisecond")
    func seconds() {
        #expect(Enricher.Configuration.seconds(.milliseconds(1)) == "0.001")
        #expect(Enricher.Configuration.seconds(.seconds(86_400)) == "86400")
        #expect(Enricher.Configuration.seconds(.milliseconds(2500)) == "2.5")
        #expect(Enricher.Configuration.seconds(.milliseconds(-500)) == "-0.5")
    }

    @Test("the deprecated `deadline` reads and writes `timeout`, and `deadlineRange` is `timeoutRange`")
    func deprecatedDeadline() {
        var configuration = Enricher.Configuration()
        #expect(Self.oldDeadline(of: configuration) == .seconds(25))
        Self.setOldDeadline(of: &configuration, to: .milliseconds(7500))
        #expect(configuration.timeout == .milliseconds(7500))
        configuration.timeout = .seconds(3)
        #expect(Self.oldDeadline(of: configuration) == .seconds(3))
        #expect(Self.oldRange(of: Enricher.Configuration.self) == Enricher.Configuration.timeoutRange)
    }

    // Through a protocol, so that using the deprecated names here is not itself a deprecation warning.
    private static func oldDeadline(of configuration: some DeprecatedConfigurationNames) -> Duration {
        configuration.deadline
    }

    private static func setOldDeadline(of configuration: inout some DeprecatedConfigurationNames, to value: Duration) {
        configuration.deadline = value
    }

    private static func oldRange<C: DeprecatedConfigurationNames>(of type: C.Type) -> ClosedRange<Duration> {
        C.deadlineRange
    }
}

/// The names `Enricher.Configuration` keeps, deprecated, for one release.
protocol DeprecatedConfigurationNames {
    var deadline: Duration { get set }
    static var deadlineRange: ClosedRange<Duration> { get }
}

extension Enricher.Configuration: DeprecatedConfigurationNames {}
