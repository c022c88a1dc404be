import Foundation
import RichPushTestSupport
import Synchronization
import Testing

@testable import RichPushCore

extension CertificateBundleCopy {
    /// The path of the copy in memory libcurl is given at `now`; throws where it is given bytes.
    func path(now: ContinuousClock.Instant = .now) throws -> String {
        guard case .path(let path) = source(now: now) else { throw CertificateBundleCopyTests.NotAPath() }
        return path
    }
}

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

    /// Runs `body` with the path of `bundle.pem` in a directory of its own, written with `text` unless nil; removes
    /// the directory after.
    func withBundle(_ text: String?, _ body: (_ bundle: String, _ directory: String) throws -> Void) throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bundle = directory + "/bundle.pem"
        if let text { try write(text, to: bundle) }
        try body(bundle, directory)
    }

    /// Runs `body` beside a `FIFOWatchdog` on the FIFO at `path`: each reader it finds waiting there is an issue.
    func watchingFIFO<T>(
        _ path: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T
    ) rethrows -> T {
        let watchdog = FIFOWatchdog(path)
        defer { #expect(watchdog.stop() == 0, "the FIFO was opened for reading", sourceLocation: sourceLocation) }
        return try body()
    }

    /// Reads run on the thread that found the copy old, at once (the default reads on another thread).
    static let inPlace: CertificateBundleCopy.Reader = { read in read() }

    struct NotAPath: Error {}

    @Test("libcurl reads a copy of the bundle; a changed bundle gets a new copy only once the copy is old")
    func refreshed() throws {
        try withBundle(Self.first) { bundle, _ in
            let start = ContinuousClock.now
            let copy = CertificateBundleCopy(
                of: bundle, refreshInterval: .seconds(3600), retention: .seconds(7200), reader: Self.inPlace, now: start
            )
            let path = try copy.path(now: start)
            #expect(path.hasPrefix("/proc/self/fd/"))
            #expect(try contents(path) == Self.first)

            try write(Self.second, to: bundle)
            #expect(try copy.path(now: start + .seconds(3599)) == path)
            let changed = try copy.path(now: start + .seconds(3600))
            #expect(changed != path)
            #expect(try contents(changed) == Self.second)
            // A transfer given the first path may still open it.
            #expect(try contents(path) == Self.first)
            #expect(copy.descriptorsHeld == 2)

            // Unchanged, the path stays (libcurl keeps the store it read); the copy replaced a retention ago is closed.
            #expect(try copy.path(now: start + .seconds(7200)) == changed)
            #expect(copy.descriptorsHeld == 2)
            #expect(try copy.path(now: start + .seconds(10801)) == changed)
            #expect(copy.descriptorsHeld == 1)
        }
    }

    @Test("a bundle replaced by a FIFO, removed or emptied of certificates keeps the copy last read, never waiting")
    func unreadableKeepsCopy() throws {
        try withBundle(Self.first) { bundle, _ in
            let start = ContinuousClock.now
            let copy = CertificateBundleCopy(of: bundle, refreshInterval: .seconds(1), reader: Self.inPlace, now: start)
            let path = try copy.path(now: start)
            try FileManager.default.removeItem(atPath: bundle)
            #expect(mkfifo(bundle, 0o600) == 0)
            // Opened blocking, the FIFO would hold this thread until a writer came: only the watchdog does.
            let again = try watchingFIFO(bundle) { try copy.path(now: start + .seconds(1)) }
            #expect(again == path)
            try FileManager.default.removeItem(atPath: bundle)
            #expect(try copy.path(now: start + .seconds(2)) == path)
            try write("no certificate here\n", to: bundle)
            #expect(try copy.path(now: start + .seconds(3)) == path)
            #expect(try contents(path) == Self.first)
            #expect(copy.descriptorsHeld == 1)
        }
    }

    @Test("a bundle unreadable when the copy is made gives an empty copy, which trusts nothing, until it can be read")
    func unreadableAtStart() throws {
        try withBundle(nil) { bundle, _ in
            #expect(mkfifo(bundle, 0o600) == 0)
            let start = ContinuousClock.now
            let copy = watchingFIFO(bundle) {
                CertificateBundleCopy(of: bundle, refreshInterval: .seconds(1), reader: Self.inPlace, now: start)
            }
            let path = try copy.path(now: start)
            #expect(path != bundle)
            #expect(try contents(path).isEmpty)
            try FileManager.default.removeItem(atPath: bundle)
            try write(Self.first, to: bundle)
            let read = try copy.path(now: start + .seconds(1))
            #expect(read != path)
            #expect(try contents(read) == Self.first)
        }
    }

    @Test("the process's copy of a bundle is one, read again when settings take it")
    func sharedCopy() throws {
        try withBundle(Self.first) { bundle, directory in
            let copy = CertificateBundleCopy.shared(of: bundle)
            let path = try copy.path()
            #expect(CertificateBundleCopy.shared(of: bundle) === copy)
            #expect(CertificateBundleCopy.shared(of: directory + "/./bundle.pem") === copy)
            #expect(try copy.path() == path)
            try write(Self.second, to: bundle)
            #expect(CertificateBundleCopy.shared(of: bundle) === copy)
            #expect(try contents(try copy.path()) == Self.second)
        }
    }

    @Test("an old copy is read again off the asking thread: the last copy is given until that read ends, and one runs")
    func readOffThread() throws {
        try withBundle(Self.first) { bundle, _ in
            let reads = LockedReads()
            let start = ContinuousClock.now
            let copy = CertificateBundleCopy(
                of: bundle, refreshInterval: .seconds(1), reader: { read in reads.append(read) }, now: start)
            let path = try copy.path(now: start)
            try write(Self.second, to: bundle)
            // Old: a read is handed to the reader, not made here; asked again before it ran, no second read.
            #expect(try copy.path(now: start + .seconds(1)) == path)
            #expect(try copy.path(now: start + .seconds(2)) == path)
            #expect(reads.count == 1)
            reads.runAll()
            let changed = try copy.path(now: start + .milliseconds(1500))
            #expect(changed != path)
            #expect(try contents(changed) == Self.second)
            #expect(reads.count == 1)
            // Read as of 1 s, when it was asked for, the copy is old again at 2 s.
            #expect(try copy.path(now: start + .seconds(2)) == changed)
            #expect(reads.count == 2)
        }
    }

    @Test("the copy in memory is sealed: opened by its path, it cannot be written, grown or cut")
    func sealed() throws {
        try withBundle(Self.first) { bundle, _ in
            let copy = CertificateBundleCopy(of: bundle, reader: Self.inPlace)
            let path = try copy.path()
            let descriptor = open(path, O_RDWR)
            #expect(descriptor >= 0, "the copy opens for writing (errno \(errno)); its seals refuse the writes")
            guard descriptor >= 0 else { return }
            defer { close(descriptor) }
            #expect(Glibc.write(descriptor, "x", 1) == -1 && errno == EPERM)
            #expect(ftruncate(descriptor, 0) == -1 && errno == EPERM)
            #expect(ftruncate(descriptor, 1 << 20) == -1 && errno == EPERM)
            #expect(try contents(path) == Self.first)
            // No seal can be taken off or added: F_SEAL_SEAL is among them.
            let seals = fcntl(descriptor, 1034)  // F_GET_SEALS
            #expect(seals >= 0 && seals & 0x1 != 0, "seals \(seals)")  // F_SEAL_SEAL
        }
    }

    @Test("a read again that began before a later one was taken is dropped: a stalled read cannot put old bytes back")
    func staleRead() throws {
        try withBundle(Self.first) { bundle, _ in
            let start = ContinuousClock.now
            let copy = CertificateBundleCopy(of: bundle, reader: Self.inPlace, now: start)
            let path = try copy.path(now: start)
            // A read begins and reads the first bytes, then stalls (on a network mount) while the CA is rotated.
            let stalled = copy.startRead()
            let old = FileSystem.readCertificateBundle(bundle)
            try write(Self.second, to: bundle)
            copy.readAgain(now: start + .seconds(10))
            let rotated = try copy.path(now: start + .seconds(10))
            #expect(rotated != path)
            copy.take(old, order: stalled, began: start + .seconds(1), now: start + .seconds(1), given: true)
            #expect(try copy.path(now: start + .seconds(11)) == rotated)
            #expect(try contents(rotated) == Self.second)
            #expect(copy.descriptorsHeld == 2)
        }
    }

    @Test("without a copy in memory, libcurl is given the bundle's bytes, never its path")
    func bytesAlone() throws {
        try withBundle(Self.first) { bundle, _ in
            let start = ContinuousClock.now
            let copy = CertificateBundleCopy(
                of: bundle, refreshInterval: .seconds(1), memoryFiles: false, reader: Self.inPlace, now: start)
            #expect(copy.source(now: start) == .bytes(Array(Self.first.utf8)))
            #expect(copy.descriptorsHeld == 0)
            try write(Self.second, to: bundle)
            #expect(copy.source(now: start + .seconds(1)) == .bytes(Array(Self.second.utf8)))
            try FileManager.default.removeItem(atPath: bundle)
            #expect(mkfifo(bundle, 0o600) == 0)
            watchingFIFO(bundle) {
                #expect(copy.source(now: start + .seconds(2)) == .bytes(Array(Self.second.utf8)))
                let unreadable = CertificateBundleCopy(of: bundle, memoryFiles: false, reader: Self.inPlace)
                #expect(unreadable.source() == .bytes([]))
            }
        }
    }

    @Test("a bundle larger than the limit is refused, not read whole")
    func tooLarge() throws {
        try withBundle(Self.first) { bundle, _ in
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: bundle))
            try handle.truncate(atOffset: UInt64(FileSystem.certificateBundleLimit) + 1)
            try handle.close()
            guard case .failure(let problem) = FileSystem.readCertificateBundle(bundle) else {
                Issue.record("a bundle over the limit was read")
                return
            }
            #expect(problem.code == .malformed)
            #expect(problem.detail == "'\(bundle)' is larger than 8 MB, which no CA bundle is")
        }
    }
}

/// Reads handed to a `CertificateBundleCopy.Reader`, held until the test runs them.
final class LockedReads: Sendable {
    private let held = Mutex<(reads: [@Sendable () -> Void], count: Int)>(([], 0))

    func append(_ read: @escaping @Sendable () -> Void) {
        held.withLock { held in
            held.reads.append(read)
            held.count += 1
        }
    }

    /// How many reads were handed over, run or not.
    var count: Int { held.withLock { $0.count } }

    /// Runs the reads held, and forgets them.
    func runAll() {
        let reads = held.withLock { held in
            defer { held.reads = [] }
            return held.reads
        }
        for read in reads { read() }
    }
}
