import FixtureOrigin
import Foundation
import Testing

@testable import RichPush

/// A loopback origin over the fixture media, an attachments directory of its own, and a configuration that
/// may reach the origin (http allowed, 127.0.0.1 opened, `media.test` pinned to it).
final class TestBed: Sendable {
    let origin: HTTPOrigin
    let attachments: String
    let configuration: Configuration

    init(_ adjust: (inout Configuration) -> Void = { _ in }) throws {
        origin = try HTTPOrigin(handler: FixtureRoutes.handler())
        attachments = NSTemporaryDirectory() + "richpush-tests-" + UUID().uuidString
        var configuration = Configuration()
        configuration.network.allowHTTP = true
        configuration.network.addressPolicy = AddressPolicy(allowed: [CIDRRange("127.0.0.1/32")!])
        configuration.network.resolve = ["media.test:\(origin.port):127.0.0.1"]
        configuration.network.allowedPorts = [1...65535]
        configuration.store = AttachmentStore(root: attachments)
        adjust(&configuration)
        self.configuration = configuration
    }

    deinit {
        origin.stop()
        try? FileManager.default.removeItem(atPath: attachments)
    }

    /// `http://media.test:PORT/path`, a name pinned to the loopback origin.
    func url(_ path: String) -> String { "http://media.test:\(origin.port)\(path)" }

    /// Every file under the attachments root, relative paths, hidden ones (partial files) included, except
    /// the media cache's own links (see `cacheFiles()`).
    func filesOnDisk() -> [String] {
        entriesOnDisk().filter {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: attachments + "/" + $0, isDirectory: &isDirectory)
            return !isDirectory.boolValue
        }
    }

    /// Every entry (files and directories) under the attachments root, except the media cache's.
    func entriesOnDisk() -> [String] {
        let all = (FileManager.default.enumerator(atPath: attachments)?.compactMap { $0 as? String }) ?? []
        return all.filter { !$0.hasPrefix(".cache-") }
    }

    /// The media cache's links (`.cache-<uuid>/<sha256>.<ext>`).
    func cacheFiles() -> [String] {
        let all = (FileManager.default.enumerator(atPath: attachments)?.compactMap { $0 as? String }) ?? []
        return all.filter { $0.hasPrefix(".cache-") && $0.contains("/") }
    }

    /// A payload with `adb_media` set to `url`, mutable.
    static func adobePayload(_ url: String) -> Payload {
        try! Payload(parsing: Array(#"{"aps":{"alert":"hi","mutable-content":1},"adb_media":"\#(url)"}"#.utf8))
    }
}

/// The bytes of a fixture media file.
func fixture(_ name: String) -> [UInt8] {
    Array(FileManager.default.contents(atPath: FixtureRoutes.fixturesDirectory + "/media/" + name)!)
}

/// The SHA-256 of a file, by the system's sha256sum (an independent check of our streaming hash).
func sha256sum(_ path: String) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
    process.arguments = [path]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self).split(separator: " ").first.map(String.init) ?? ""
}

/// Runs blocking work (a child process, a key generation) on a thread of its own, so that it never holds one
/// of the cooperative pool's few threads while other tests wait on their deadlines.
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// How late after its deadline a result may arrive in these tests. The suite runs its tests in parallel on a
/// two-core machine while child processes start; a bound this loose still fails if expiry is not enforced
/// (the servers in those tests would otherwise hold a transfer for many seconds). The benchmark, not the test
/// suite, measures deadline accuracy.
let deadlineMargin: Duration = .milliseconds(1500)
