import Foundation
import RichPushTestSupport
import Testing

@testable import RichPushCore

@Suite("CA bundle copies")
struct CertificateBundleCopyTests {
    static let first = "-----BEGIN CERTIFICATE-----\nMIIB first\n-----END CERTIFICATE-----\n"
    static let second = "-----BEGIN CERTIFICATE-----\nMIIB second\n-----END CERTIFICATE-----\n"

    func write(_ text: String, to path: String) throws {
        try? FileManager.default.removeItem(atPath: path)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    func contents(_ path: String) throws -> String {
        String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
    }

    @Test("libcurl reads a copy of the bundle; a changed bundle gets a new copy only once the copy is old")
    func refreshed() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bundle = directory + "/bundle.pem"
        try write(Self.first, to: bundle)
        let start = ContinuousClock.now
        let copy = CertificateBundleCopy(
            of: bundle, refreshInterval: .seconds(3600), retention: .seconds(7200), now: start)
        let path = copy.path(now: start)
        #expect(path.hasPrefix("/proc/self/fd/"))
        #expect(try contents(path) == Self.first)

        try write(Self.second, to: bundle)
        #expect(copy.path(now: start + .seconds(3599)) == path)
        let changed = copy.path(now: start + .seconds(3600))
        #expect(changed != path)
        #expect(try contents(changed) == Self.second)
        // A transfer given the first path may still open it.
        #expect(try contents(path) == Self.first)
        #expect(copy.descriptorsHeld == 2)

        // Unchanged, the path stays (libcurl keeps the store it read); the copy replaced a retention ago is closed.
        #expect(copy.path(now: start + .seconds(7200)) == changed)
        #expect(copy.descriptorsHeld == 2)
        #expect(copy.path(now: start + .seconds(10800)) == changed)
        #expect(copy.descriptorsHeld == 1)
    }

    @Test("a bundle replaced by a FIFO, removed or emptied of certificates keeps the copy last read, never waiting")
    func unreadableKeepsCopy() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bundle = directory + "/bundle.pem"
        try write(Self.first, to: bundle)
        let start = ContinuousClock.now
        let copy = CertificateBundleCopy(of: bundle, refreshInterval: .seconds(1), now: start)
        let path = copy.path(now: start)
        try FileManager.default.removeItem(atPath: bundle)
        #expect(mkfifo(bundle, 0o600) == 0)
        // Opened blocking, the FIFO would hold this thread until a writer came: nothing writes to it.
        #expect(copy.path(now: start + .seconds(1)) == path)
        try FileManager.default.removeItem(atPath: bundle)
        #expect(copy.path(now: start + .seconds(2)) == path)
        try write("no certificate here\n", to: bundle)
        #expect(copy.path(now: start + .seconds(3)) == path)
        #expect(try contents(path) == Self.first)
        #expect(copy.descriptorsHeld == 1)
    }

    @Test("a bundle unreadable when the copy is made gives an empty copy, which trusts nothing, until it can be read")
    func unreadableAtStart() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bundle = directory + "/bundle.pem"
        #expect(mkfifo(bundle, 0o600) == 0)
        let start = ContinuousClock.now
        let copy = CertificateBundleCopy(of: bundle, refreshInterval: .seconds(1), now: start)
        let path = copy.path(now: start)
        #expect(path != bundle)
        #expect(try contents(path).isEmpty)
        try FileManager.default.removeItem(atPath: bundle)
        try write(Self.first, to: bundle)
        let read = copy.path(now: start + .seconds(1))
        #expect(read != path)
        #expect(try contents(read) == Self.first)
    }

    @Test("the process's copy of a bundle is one, read again when settings take it")
    func sharedCopy() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bundle = directory + "/bundle.pem"
        try write(Self.first, to: bundle)
        let copy = CertificateBundleCopy.shared(of: bundle)
        let path = copy.path()
        #expect(CertificateBundleCopy.shared(of: bundle) === copy)
        #expect(CertificateBundleCopy.shared(of: directory + "/./bundle.pem") === copy)
        #expect(copy.path() == path)
        try write(Self.second, to: bundle)
        #expect(CertificateBundleCopy.shared(of: bundle) === copy)
        #expect(try contents(copy.path()) == Self.second)
    }

    @Test("a bundle larger than the limit is refused, not read whole")
    func tooLarge() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bundle = directory + "/bundle.pem"
        try write(Self.first, to: bundle)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: bundle))
        try handle.truncate(atOffset: UInt64(FileSystem.certificateBundleLimit) + 1)
        try handle.close()
        guard case .failure(let problem) = FileSystem.readCertificateBundle(bundle) else {
            Issue.record("a bundle over the limit was read")
            return
        }
        #expect(problem.code == .malformed)
        #expect(problem.detail == "'\(bundle)' is larger than 64 MiB, which no CA bundle is")
    }
}
