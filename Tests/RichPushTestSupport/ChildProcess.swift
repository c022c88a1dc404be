import CSystem
import Foundation
import Testing

/// A child process of a test: every program the tests start (the servers they stand up, such as nginx, redis-server,
/// SeaweedFS's `weed`, `openssl s_server` and the richpush binary's `serve`, `worker` and `stream`, and the one-shot
/// tools such as curl, vips and openssl) is started, waited for and ended through this one type.
///
/// - Start: `init(_:_:environment:directory:)`, the standard streams, `logFile`, then `run()`.
/// - Readiness: `waitUntilReady(_:within:every:log:_:)` polls a probe with a bound; when the child exits first, or
///   the bound passes, it throws `Failure` with the end of the child's diagnostics. No fixed sleeps.
/// - End: `stop(_:grace:)` sends SIGTERM (or another signal, or none), waits up to `grace`, then SIGKILL, and reaps.
///   `deinit` stops it with `stopGrace`, so that a test that fails (throws before its own clean-up) leaves no process
///   behind.
///
/// Spawned with `posix_spawn`: the part of Foundation's `Process` the tests use, without its crash. Swift 6.3.1's
/// `Process.run()` lists `/proc/self/fd` to close the child's inherited descriptors and copies each entry's whole
/// 256-byte name field, reading past glibc's directory buffer when an entry ends a page: the test process died with
/// SIGSEGV in `Process.run` now and then (seen in a clean-clone CI run; fixed in Foundation after 6.3.1,
/// swift-corelibs-foundation#5472). Here glibc's `closefrom` action closes them in the child instead.
///
/// Signals: the child starts with no signal blocked and SIGTERM, SIGINT, SIGHUP and SIGQUIT at their defaults, as the
/// library's SVG renderer starts its own. A child inherits the mask of the thread that spawns it, and the threads of
/// the cooperative pool (Dispatch's) block SIGTERM among others, while an in-process `TerminationSignals` test may
/// have set SIGTERM to `SIG_IGN`, which an exec keeps: before, whether a child could be ended by SIGTERM depended on
/// the thread that started it (redis-server and `openssl s_server` were ended otherwise for that reason).
///
/// Standard streams as `Process` takes them: nil inherits the test's, a `FileHandle` is given as it is
/// (`FileHandle.nullDevice` as /dev/null; `outputFile(_:appending:)` makes one for a file), a `Pipe` gives the child
/// its reading end (input) or writing end (output), which the parent then closes, so that the parent reads an end of
/// file when the child exits.
///
/// Blocking: `waitUntilReady`, `waitUntilExit` and `stop` block the calling thread; call them off the cooperative
/// pool (`offPool`, or a test under `.offPool`). `exitStatus(_:within:)` is the async wait.
package final class ChildProcess: @unchecked Sendable {
    /// A bounded wait that ended without what it waited for: the child exited first, or the bound passed while it
    /// ran. `log` is the end of its diagnostics.
    package struct Failure: Error, CustomStringConvertible {
        /// How the wait ended.
        package enum Reason: Sendable {
            /// The child exited (its exit code, or the signal that ended it) before what was waited for.
            case exited(status: Int32)
            /// The bound passed while the child was still running.
            case timedOut(after: Duration)
        }

        /// The program and its process id: `/usr/sbin/nginx (pid 123)`.
        package let program: String
        /// What the test waited for: "nginx on port 8443 to serve".
        package let what: String
        package let reason: Reason
        /// The end of the child's diagnostics (`logFile` from where this start began, or what the caller gave).
        package let log: String

        package var description: String {
            let ended =
                switch reason {
                case .exited(let status): "the child exited first (status \(status))"
                case .timedOut(let limit): "\(limit) passed, the child still running"
                }
            return "\(program): waiting for \(what), \(ended); "
                + (log.isEmpty ? "it wrote no diagnostics" : "its diagnostics: \(log)")
        }
    }

    /// A failure to spawn (no executable, a stream of the wrong type, or posix_spawn's error).
    package struct SpawnFailure: Error, CustomStringConvertible {
        package let detail: String
        package var description: String { detail }
    }

    /// The program, by its path (no PATH search).
    package var executableURL: URL?
    /// The arguments after the program's own name.
    package var arguments: [String] = []
    /// Variables added to (or replacing) the test process's own environment, which the child gets otherwise as it is.
    package var environment: [String: String] = [:]
    /// The child's working directory; nil for the test's.
    package var currentDirectoryURL: URL?
    package var standardInput: Any?
    package var standardOutput: Any?
    package var standardError: Any?
    /// The file the child writes its diagnostics to (its standard error's file, or a log it is told to keep), read
    /// into a `Failure` from where it ended when `run()` started the child: a log appended to across restarts then
    /// gives this start's lines only.
    package var logFile: String?
    /// How long `deinit` waits after SIGTERM before SIGKILL. 3 s: the servers the tests start end in milliseconds
    /// on SIGTERM when idle, and a `deinit` that stops a child is a failed test's clean-up, on whatever thread let go
    /// of it last; `.zero` for SIGKILL at once (a child that is slow to end on SIGTERM, such as weed).
    package var stopGrace: Duration = .seconds(3)
    package private(set) var processIdentifier: pid_t = 0

    private let lock = NSLock()
    /// The raw wait status once the child has been reaped (guarded by `lock`). Reaping happens here only, so that a
    /// process id is never signalled after it was reaped (and might have been given to another process).
    private var reaped: Int32?
    /// The size of `logFile` when the child started.
    private var logStart = 0

    /// The signals a child starts with at their defaults (see the type).
    private static let defaultSignals = [SIGTERM, SIGINT, SIGHUP, SIGQUIT]

    /// A child to be configured and `run()`.
    package init() {}

    /// A child of `executable` (a path) with `arguments`, `environment` added to the test's, in `directory` (nil:
    /// the test's); the streams and `logFile` are set before `run()`.
    package convenience init(
        _ executable: String, _ arguments: [String] = [], environment: [String: String] = [:], directory: String? = nil
    ) {
        self.init()
        executableURL = URL(fileURLWithPath: executable)
        self.arguments = arguments
        self.environment = environment
        currentDirectoryURL = directory.map { URL(fileURLWithPath: $0) }
    }

    /// Stops the child (`stop(grace: stopGrace)`) if it still runs: no test leaves a process behind.
    deinit { stop(grace: stopGrace) }

    // MARK: - Starting

    /// Starts the child.
    /// - Throws: `SpawnFailure` when it cannot be started.
    package func run() throws {
        guard let path = executableURL?.path else { throw SpawnFailure(detail: "no executable") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
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
                // Once, when one pipe takes both outputs: a descriptor closed twice may be another's by then.
                if !parentEnds.contains(where: { $0 === childEnd }) { parentEnds.append(childEnd) }
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
        try Self.check(
            csystem_spawn_default_signals(&attributes, Self.defaultSignals, Int32(Self.defaultSignals.count), 0),
            "signal attributes")
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        // The test's own environment as it is (environ), unless variables are added.
        var variables: [UnsafeMutablePointer<CChar>?] = []
        if !environment.isEmpty {
            let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            variables = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        }
        defer { for pointer in argv + variables { free(pointer) } }
        if let logFile { logStart = (try? FileManager.default.attributesOfItem(atPath: logFile)[.size] as? Int) ?? 0 }
        var pid: pid_t = 0
        let spawned =
            variables.isEmpty
            ? posix_spawn(&pid, path, &actions, &attributes, argv, environ)
            : posix_spawn(&pid, path, &actions, &attributes, argv, variables)
        try Self.check(spawned, path)
        processIdentifier = pid
        for end in parentEnds { try? end.close() }
    }

    /// A new, empty file at `path` (or, `appending`, the file as it is, written at its end), open for writing: a
    /// child's output kept where a test (or a `Failure`) reads it.
    /// - Throws: `SpawnFailure` when it cannot be made or opened.
    package static func outputFile(_ path: String, appending: Bool = false) throws -> FileHandle {
        let exists = appending && FileManager.default.fileExists(atPath: path)
        guard exists || FileManager.default.createFile(atPath: path, contents: nil),
            let file = FileHandle(forWritingAtPath: path)
        else { throw SpawnFailure(detail: "cannot create \(path)") }
        if appending { file.seekToEndOfFile() }
        return file
    }

    private static func check(_ error: Int32, _ what: String) throws {
        guard error == 0 else { throw SpawnFailure(detail: "\(what): \(String(cString: strerror(error)))") }
    }

    // MARK: - Running to the end

    /// What a child run to its end (`runToEnd`) left: its termination status and what it wrote.
    package struct Finished: Sendable {
        /// The exit code, or the number of the signal that ended it.
        package let status: Int32
        /// Its standard output (with its standard error, when merged).
        package let output: [UInt8]
        /// Its standard error, when captured apart.
        package let errors: [UInt8]
        /// `output` as text (UTF-8, invalid sequences replaced).
        package var outputText: String { String(decoding: output, as: UTF8.self) }
        /// `errors` as text (UTF-8, invalid sequences replaced).
        package var errorsText: String { String(decoding: errors, as: UTF8.self) }
    }

    /// Where a child run to its end sends its standard error.
    package enum ErrorStream: Sendable {
        /// Read apart: `Finished.errors`.
        case captured
        /// Into the same pipe as its standard output (`2>&1`): `Finished.output`, interleaved as it wrote them.
        case mergedIntoOutput
        /// To /dev/null.
        case discarded
    }

    /// Runs `executable` with `arguments` to its end, on this thread (off the cooperative pool), and reaps it: gives
    /// it `input` on its standard input (then an end of file; nil for /dev/null) while reading both its outputs, so
    /// that neither side waits on a full pipe.
    /// - Parameter limit: a bound for a failure only (a child that hangs): 300 s, where the slowest one-shot the tests
    ///   run (the debug binary enriching under a loaded full run) takes seconds.
    /// - Throws: `SpawnFailure` when it cannot start; `Failure` (`.timedOut`) when `limit` passes first, the child
    ///   killed and reaped, with what it wrote to standard error.
    /// Blocks SIGPIPE on this thread; what it returns takes off one the thread raised meanwhile and restores the
    /// mask, on the same thread.
    private static func blockPipeSignal() -> () -> Void {
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        var previousMask = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipeSignal, &previousMask)
        return {
            var now = timespec()
            while sigtimedwait(&pipeSignal, nil, &now) == SIGPIPE {}
            pthread_sigmask(SIG_SETMASK, &previousMask, nil)
        }
    }

    /// Writes `bytes` to `descriptor` (a child's input) with SIGPIPE blocked on this thread, and one it raised taken
    /// off before the mask is restored: a child that ended makes it false (EPIPE), where the signal killed the test
    /// process. Blocks as the descriptor does.
    package static func writeWithoutPipeSignal(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        let restore = blockPipeSignal()
        defer { restore() }
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return false }
            offset += count
        }
        return true
    }

    package static func runToEnd(
        _ executable: String, _ arguments: [String] = [], environment: [String: String] = [:],
        directory: String? = nil, input: [UInt8]? = nil, errors: ErrorStream = .captured,
        within limit: Duration = .seconds(300)
    ) throws -> Finished {
        let child = ChildProcess(executable, arguments, environment: environment, directory: directory)
        let output = Pipe()
        let errorPipe = errors == .captured ? Pipe() : nil
        let inputPipe = input.map { _ in Pipe() }
        child.standardOutput = output
        child.standardError =
            switch errors {
            case .captured: errorPipe
            case .mergedIntoOutput: output
            case .discarded: FileHandle.nullDevice
            }
        child.standardInput = inputPipe ?? FileHandle.nullDevice
        try child.run()
        // Read ends (and the input's writing end) by descriptor; each closed at its end. `Pipe` closes them too when
        // it goes, which is safe: FileHandle closes a descriptor once.
        var reading: [(handle: FileHandle, bytes: [UInt8])] = [(output.fileHandleForReading, [])]
        if let errorPipe { reading.append((errorPipe.fileHandleForReading, [])) }
        var writing = inputPipe?.fileHandleForWriting
        var pending = input.map { $0[...] } ?? []
        if let writing {
            _ = fcntl(writing.fileDescriptor, F_SETFL, fcntl(writing.fileDescriptor, F_GETFL) | O_NONBLOCK)
        }
        // A write to a child that closed its input raises SIGPIPE, which the test process does not ignore (it would
        // die of it): blocked on this thread while it writes.
        let restore = blockPipeSignal()
        defer { restore() }
        let end = ContinuousClock.now + limit
        var open = Array(reading.indices)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !open.isEmpty || writing != nil {
            if let handle = writing, pending.isEmpty {
                try? handle.close()
                writing = nil
                continue
            }
            guard ContinuousClock.now < end else {
                child.stop(grace: .zero)
                let log = String(decoding: reading.last!.bytes, as: UTF8.self)
                throw child.failure("\(executable) to end", .timedOut(after: limit)) { log }
            }
            var pollers = open.map { pollfd(fd: reading[$0].handle.fileDescriptor, events: Int16(POLLIN), revents: 0) }
            if let writing { pollers.append(pollfd(fd: writing.fileDescriptor, events: Int16(POLLOUT), revents: 0)) }
            guard poll(&pollers, nfds_t(pollers.count), 50) > 0 else { continue }
            if let handle = writing, pollers.last!.revents != 0 {
                let count = pending.withUnsafeBytes { write(handle.fileDescriptor, $0.baseAddress, $0.count) }
                // EPIPE: the child closed its input, or ended; what it did not read is dropped, as a shell's pipe does.
                if count > 0 { pending = pending.dropFirst(count) } else if errno != EAGAIN { pending = [] }
            }
            for (poller, index) in zip(pollers, open) where poller.revents != 0 {
                let count = read(poller.fd, &buffer, buffer.count)
                if count > 0 { reading[index].bytes += buffer[..<count] } else { open.removeAll { $0 == index } }
            }
        }
        // Both outputs ended: the child has closed them, and ends (unless it gave them to a child of its own).
        let status = try child.waitUntilExit("\(executable) to exit", within: max(end - .now, .seconds(1)))
        return Finished(
            status: status, output: reading[0].bytes, errors: errorPipe == nil ? [] : reading[1].bytes)
    }

    // MARK: - Readiness

    /// What `logFile` gained since this start, its last `last` characters; empty without a log file.
    package func log(last: Int = 4_000) -> String {
        guard let logFile else { return "" }
        let bytes = (FileManager.default.contents(atPath: logFile) ?? Data()).dropFirst(logStart)
        return String(String(decoding: bytes, as: UTF8.self).suffix(last))
    }

    /// Polls `probe` every `interval` until it returns true, on this thread. The bound only bounds a failure: a
    /// passing wait takes as long as the child takes to be ready. 30 s: starts measured 0.05 to 4.4 s on two loaded
    /// cores (s_server, weed); see `waitUntil` for why shorter bounds failed in full runs.
    /// - Parameters:
    ///   - what: what is waited for, for the failure ("nginx on port 8443 to serve").
    ///   - log: the child's diagnostics for the failure; nil for `log()` (`logFile`).
    ///   - probe: whether the child is ready; an error it throws ends the wait and is rethrown.
    /// - Throws: `Failure` (`.exited` when the child exits first, `.timedOut` when `limit` passes), or the probe's
    ///   error.
    package func waitUntilReady(
        _ what: @autoclosure () -> String, within limit: Duration = .seconds(30),
        every interval: Duration = .milliseconds(20), log: (() -> String)? = nil, _ probe: () throws -> Bool
    ) throws {
        let end = ContinuousClock.now + limit
        while true {
            if try probe() { return }
            // Checked after the probe: a child that was ready and then exited was seen ready.
            if !isRunning { throw failure(what(), .exited(status: terminationStatus), log) }
            if ContinuousClock.now >= end { throw failure(what(), .timedOut(after: limit), log) }
            usleep(UInt32(interval / .microseconds(1)))
        }
    }

    /// Blocks until the child exits, polling every `interval`, and reaps it; its termination status.
    /// - Throws: `Failure` (`.timedOut`) when `limit` passes first, with the end of `log()`; the child runs on.
    package func waitUntilExit(
        _ what: @autoclosure () -> String, within limit: Duration = .seconds(30),
        every interval: Duration = .milliseconds(20)
    ) throws -> Int32 {
        let end = ContinuousClock.now + limit
        while isRunning {
            if ContinuousClock.now >= end { throw failure(what(), .timedOut(after: limit), nil) }
            usleep(UInt32(interval / .microseconds(1)))
        }
        return terminationStatus
    }

    /// A `Failure` of this child, its diagnostics `log()` unless `log` gives them.
    private func failure(_ what: String, _ reason: Failure.Reason, _ log: (() -> String)?) -> Failure {
        let program = "\(executableURL?.path ?? "?") (pid \(processIdentifier))"
        return Failure(program: program, what: what, reason: reason, log: log?() ?? self.log())
    }

    // MARK: - Exit

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

    /// Blocks until the child has exited, and reaps it. Only off the cooperative pool.
    package func waitUntilExit() {
        while isRunning { usleep(2_000) }
    }

    /// The exit code, or the number of the signal that ended the child (as `Process` reports it); -1 while it runs.
    package var terminationStatus: Int32 {
        lock.lock()
        defer { lock.unlock() }
        guard let status = reaped else { return -1 }
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : signal
    }

    /// Sends `number` to the child while it runs (never once it was reaped: its process id may be another's then).
    package func signal(_ number: Int32) {
        lock.lock()
        defer { lock.unlock() }
        guard reaped == nil, processIdentifier > 0 else { return }
        kill(processIdentifier, number)
    }

    /// Sends SIGTERM.
    package func terminate() { signal(SIGTERM) }

    /// Ends the child and reaps it: sends `signal` (none when nil: the child was asked to end otherwise, as
    /// redis-server by its SHUTDOWN), waits up to `grace` for the exit, then sends SIGKILL. Does nothing once the
    /// child has exited; blocks. Returns the termination status (the signal's number when it was killed).
    @discardableResult
    package func stop(_ signal: Int32? = SIGTERM, grace: Duration = .seconds(3)) -> Int32 {
        guard isRunning else { return terminationStatus }
        if grace > .zero {
            if let signal { self.signal(signal) }
            let end = ContinuousClock.now + grace
            while isRunning, ContinuousClock.now < end { usleep(10_000) }
        }
        self.signal(SIGKILL)
        waitUntilExit()
        return terminationStatus
    }

    /// Waits for the exit, failing the test loudly (and throwing) when `limit` passes first; the exit status.
    package func exitStatus(_ what: String, within limit: Duration) async throws -> Int32 {
        try await waitUntil("\(what) to exit", within: limit, every: .milliseconds(20)) { !self.isRunning }
        return terminationStatus
    }
}
