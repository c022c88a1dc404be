import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A new directory of its own under the temporary directory.
package func temporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "richpush-cli-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Whether this machine lets us mount a small tmpfs (root in a sandbox that allows it): the real ENOSPC test.
package let canMountTmpfs: Bool = {
    let point = NSTemporaryDirectory() + "richpush-mount-probe-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: point, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: point) }
    guard mount("tmpfs", point, "tmpfs", 0, "size=64k") == 0 else { return false }
    umount(point)
    return true
}()

/// Runs `body` with a new directory on which a tmpfs of `size` (mount's `size=` option) is mounted; unmounts and
/// removes it afterwards. A file still open on it when `body` has returned (the mount busy) is the code's leak: the
/// test fails naming it, once the file has stayed open for 10 s, and the mount is detached.
package func withTmpfs<Result>(
    size: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: (String) async throws -> Result
) async throws -> Result {
    let point = try temporaryDirectory()
    #expect(mount("tmpfs", point, "tmpfs", 0, "size=\(size)") == 0, sourceLocation: sourceLocation)
    let result = try await body(point)
    try await unmount(point, sourceLocation: sourceLocation)
    try? FileManager.default.removeItem(atPath: point)
    return result
}

/// Unmounts `point`, waiting up to 10 s for the files open on it to close; then records what is still open there
/// and detaches the mount.
package func unmount(_ point: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let clock = ContinuousClock()
    let end = clock.now + .seconds(10)
    while umount(point) != 0 {
        guard errno == EBUSY else {
            Issue.record("umount \(point): \(String(cString: strerror(errno)))", sourceLocation: sourceLocation)
            return
        }
        guard clock.now < end else {
            Issue.record(
                "\(point) still busy 10 s after the test; open there: \(openFiles(under: point))",
                sourceLocation: sourceLocation)
            umount2(point, Int32(MNT_DETACH))
            return
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// The files this process has open under `directory`, by their descriptors' links in /proc/self/fd.
package func openFiles(under directory: String) -> [String] {
    entries("/proc/self/fd").compactMap { descriptor in
        let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + descriptor)) ?? ""
        return target.hasPrefix(directory) ? descriptor + " -> " + target : nil
    }
}

/// The names in a directory, sorted; empty when it cannot be read.
package func entries(_ directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
}

/// Every entry below a directory, as paths relative to it, sorted; links are listed, not followed. Read by `readdir`
/// (`contentsOfDirectory`) and `lstat`, never by `FileManager.enumerator`: on Linux that is glibc's fts under
/// `FTS_NOSTAT`, which takes a directory's link count for its number of subdirectories and, once it has seen that
/// many, enters no later one, so a directory made while it lists (a spare attachment) hid another's files.
package func entriesBelow(_ directory: String) -> [String] {
    entries(directory).flatMap { name -> [String] in
        let path = directory + "/" + name
        var status = stat()
        guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else { return [name] }
        return [name] + entriesBelow(path).map { name + "/" + $0 }
    }
}

/// A TCP socket bound to 127.0.0.1:`port`, not listening (with `SO_REUSEADDR` when `reuseAddress`), or nil when the
/// bind fails.
package func boundSocket(_ port: Int, reuseAddress: Bool) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    var yes: Int32 = 1
    if reuseAddress { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size)) }
    guard withSocketAddress("127.0.0.1", port: port, { bind(fd, $0, $1) }) == 0 else {
        close(fd)
        return nil
    }
    return fd
}

/// Whether a socket without `SO_REUSEADDR` can bind 127.0.0.1:`port` now (it is closed at once).
package func canBind(_ port: Int) -> Bool {
    guard let fd = boundSocket(port, reuseAddress: false) else { return false }
    close(fd)
    return true
}

/// Sets a path's modification time to two hours ago, so that `gc --older-than 3600` (or less) takes it.
package func makeOld(_ path: String) throws {
    try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -7200)], ofItemAtPath: path)
}

/// A new UUID as RichPush names its directories.
package func attachmentName() -> String { UUID().uuidString.lowercased() }

extension Array where Element == UInt8 {
    /// Whether `subsequence` occurs in the bytes (a metadata marker left in a written file).
    package func contains(subsequence: [UInt8]) -> Bool {
        guard !subsequence.isEmpty, count >= subsequence.count else { return false }
        return (0...(count - subsequence.count)).contains {
            self[$0..<($0 + subsequence.count)].elementsEqual(subsequence)
        }
    }
}
