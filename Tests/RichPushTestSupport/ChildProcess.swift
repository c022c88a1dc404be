import CSystem
import Foundation
import Testing

/// A child process, spawned with `posix_spawn`: the part of Foundation's `Process` the tests use, without its
/// crash. Swift 6.3.1's `Process.run()` lists `/proc/self/fd` to close the child's inherited descriptors and copies
/// each entry's whole 256-byte name field, reading past glibc's directory buffer when an entry ends a page: the
/// test process died with SIGSEGV in `Process.run` now and then (seen in a clean-clone CI run; fixed in Foundation
/// after 6.3.1, swift-corelibs-foundation#5472). Here glibc's `closefrom` action closes them in the child instead.
///
/// Standard streams as `Process` takes them: nil inherits the test's, a `FileHandle` is given as it is
/// (`FileHandle.nullDevice` as /dev/null), a `Pipe` gives the child its reading end (input) or writing end (output),
/// which the parent then closes, so that the parent reads an end of file when the child exits.
package final class ChildProcess: @unchecked Sendable {
    package var executableURL: URL?
    package var arguments: [String] = []
    /// The child's working directory; nil for the test's.
    package var currentDirectoryURL: URL?
    package var standardInput: Any?
    package var standardOutput: Any?
    package var standardError: Any?
    package private(set) var processIdentifier: pid_t = 0

    package init() {}
    private let lock = NSLock()
    /// The raw wait status once the child has been reaped.
    private var reaped: Int32?

    package struct SpawnFailure: Error, CustomStringConvertible {
        package let detail: String
        package var description: String { detail }
    }

    package func run() throws {
        guard let path = executableURL?.path else { throw SpawnFailure(detail: "no executable") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var parentEnds: [FileHandle] = []
        for (stream, target, isInput) in [
            (standardInput, STDIN_FILENO, true), (standardOutput, STDOUT_FILENO, false),
            (standardError, STDERR_FILENO, false),
        ] {
            switch stream {
            case let handle as FileHandle where handle === FileHandle.nullDevice:
                // Foundation's null device has no descriptor (-1): dup2 of it failed, unseen, and the child kept
                // the test's own stream.
                let flags = isInput ? O_RDONLY : O_WRONLY
                try Self.check(posix_spawn_file_actions_addopen(&actions, target, "/dev/null", flags, 0), "/dev/null")
            case let handle as FileHandle:
                try Self.check(posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, target), "dup2 action")
            case let pipe as Pipe:
                let childEnd = isInput ? pipe.fileHandleForReading : pipe.fileHandleForWriting
                let added = posix_spawn_file_actions_adddup2(&actions, childEnd.fileDescriptor, target)
                try Self.check(added, "dup2 action")
                parentEnds.append(childEnd)
            case nil:
                break
            default:
                throw SpawnFailure(detail: "a standard stream must be a FileHandle, a Pipe or nil")
            }
        }
        if let directory = currentDirectoryURL?.path {
            try Self.check(csystem_spawn_change_directory(&actions, directory), "chdir action")
        }
        try Self.check(csystem_spawn_close_from(&actions, 3), "closefrom action")
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        try Self.check(spawned, path)
        processIdentifier = pid
        for end in parentEnds { try? end.close() }
    }

    private static func check(_ error: Int32, _ what: String) throws {
        guard error == 0 else { throw SpawnFailure(detail: "\(what): \(String(cString: strerror(error)))") }
    }

    /// Whether the child has not exited yet (reaping it when it has).
    package var isRunning: Bool {
        lock.lock()
        defer { lock.unlock() }
        guard reaped == nil, processIdentifier > 0 else { return false }
        var status: Int32 = 0
        guard waitpid(processIdentifier, &status, WNOHANG) == processIdentifier else { return true }
        reaped = status
        return false
    }

    /// Blocks until the child has exited. Only off the cooperative pool, as `Process.waitUntilExit`.
    package func waitUntilExit() {
        while isRunning { usleep(2_000) }
    }

    /// The exit code, or the number of the signal that ended the child (as `Process` reports it).
    package var terminationStatus: Int32 {
        lock.lock()
        defer { lock.unlock() }
        guard let status = reaped else { return -1 }
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : signal
    }

    /// Sends SIGTERM.
    package func terminate() { kill(processIdentifier, SIGTERM) }
}

extension ChildProcess {
    /// Waits for the exit, failing loudly (and throwing) when `limit` passes first; the exit status.
    package func exitStatus(_ what: String, within limit: Duration) async throws -> Int32 {
        try await waitUntil("\(what) to exit", within: limit, every: .milliseconds(20)) { !self.isRunning }
        return terminationStatus
    }

    /// SIGKILL and reap, when still running: a test's processes never outlive it.
    package func killIfRunning() {
        guard isRunning else { return }
        kill(processIdentifier, SIGKILL)
        waitUntilExit()
    }
}
