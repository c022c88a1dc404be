internal import CSystem
import RichPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// One child process of the SVG renderer (`SVGRenderer`): spawned, killed on demand from any thread, waited for on
/// the thread that spawned it. It owns the child's process id until it has reaped it, so that a kill can never
/// reach a process that reused the id.
///
/// The child leads a process group of its own (`POSIX_SPAWN_SETPGROUP`), killed whole with SIGKILL: nothing it
/// might start outlives it, and a terminal's Ctrl-C (sent to the foreground group) reaches the parent alone, which
/// then stops its conversions as its shutdown says. SIGKILL because the child may be inside librsvg, which looks
/// at nothing while it renders a filter; the kernel ends it whatever it is doing.
final class RendererProcess: Sendable {
    private struct State {
        /// The child's id, once spawned, until reaped.
        var pid: pid_t = 0
        /// Whether `kill()` was called (before the spawn: the child is never spawned).
        var killed = false
    }

    private let state = LockedValue(State())

    /// How the child ended.
    enum Ending: Equatable {
        /// It exited with this status.
        case exited(Int32)
        /// A signal ended it: ours (`kill()`), or the kernel's (a resource limit).
        case signalled(Int32)
    }

    /// What a finished child left: how it ended, whether `kill()` was called, and what it wrote on its report
    /// descriptor (at most `maximumReport` bytes).
    struct Finished {
        /// How it ended.
        var ending: Ending
        /// Whether `kill()` was called: its ending is then ours, whatever it says.
        var killed: Bool
        /// What it wrote on its report descriptor.
        var report: [UInt8]
    }

    /// The most of the child's report read: one line and a failure's detail.
    static let maximumReport = 16_384

    /// The signals whose disposition the child gets back to the default: the parent ignores SIGTERM and SIGINT
    /// while its signal sources wait for them (`TerminationSignals`), and an ignored disposition survives `execve`;
    /// SIGXCPU must end a child past its CPU limit. SIGPIPE stays ignored, as in the parent, so that a write the
    /// child cannot make fails as it would in process; the child ignores SIGXFSZ itself (its file-size limit).
    private static let defaultSignals = [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGXCPU]

    /// The child's descriptor for the image it writes (the parent's partial attachment file).
    static let outputDescriptor: Int32 = 3
    /// The child's descriptor for its report (`SVGRendererChild.Report`), a pipe read here once it has ended.
    static let reportDescriptor: Int32 = 4

    /// Spawns `executable` with `arguments` (argv[0] first) and `environment`, its standard input and output
    /// /dev/null, its standard error the parent's, `output` as its `outputDescriptor`, and a pipe read here as its
    /// `reportDescriptor`; waits for it to end, then reaps it. `started` is called with its id once it runs, `ended`
    /// once it is reaped.
    /// - Throws: `transform-failed` when it cannot be spawned (the system's reason), `expired` when `kill()` came
    ///   before the spawn (the step reports its own reason for a stopped job).
    func run(
        _ executable: String, arguments: [String], environment: [String], output: Int32,
        started: (pid_t) -> Void, ended: (pid_t) -> Void
    ) throws(TransformFailure) -> Finished {
        var ends: [Int32] = [-1, -1]
        let piped = csystem_pipe(&ends)
        guard piped == 0 else {
            throw TransformFailure(.transformFailed, "cannot make the SVG renderer's pipe: \(Self.reason(piped))")
        }
        let (reading, writing) = (ends[0], ends[1])
        defer { close(reading) }
        let spawned = spawn(executable, arguments, environment, output: output, report: writing)
        close(writing)
        let pid: pid_t
        switch spawned {
        case .success(let child): pid = child
        case .failure(let failure): throw failure
        }
        started(pid)
        defer { ended(pid) }
        // Waits without reaping (WNOWAIT): until the id is reaped below, under the lock, `kill()` may still name it.
        var information = siginfo_t()
        while waitid(P_PID, id_t(pid), &information, WEXITED | WNOWAIT) != 0, errno == EINTR {}
        let (status, killed) = state.withLock { state -> (Int32, Bool) in
            // Whatever the child left in its group goes with it (it starts nothing; this makes sure).
            _ = Glibc.kill(-pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0, errno == EINTR {}
            state.pid = 0
            return (status, state.killed)
        }
        return Finished(ending: Self.ending(status), killed: killed, report: Self.drain(reading))
    }

    /// Kills the child and its group with SIGKILL if it runs; a child not spawned yet never is. Any thread; returns
    /// at once (the spawning thread reaps it).
    func kill() {
        state.withLock { state in
            state.killed = true
            if state.pid > 0 { _ = Glibc.kill(-state.pid, SIGKILL) }
        }
    }

    /// `posix_spawn`, under the lock so that a `kill()` either comes first (no spawn) or sees the id.
    private func spawn(
        _ executable: String, _ arguments: [String], _ environment: [String], output: Int32, report: Int32
    ) -> Result<pid_t, TransformFailure> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        let prepared = [
            posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0),
            // A library printing to standard output must not fill a pipe nobody reads until the child ends.
            posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0),
            posix_spawn_file_actions_adddup2(&actions, output, Self.outputDescriptor),
            posix_spawn_file_actions_adddup2(&actions, report, Self.reportDescriptor),
            // Only the descriptors above: none of the parent's sockets or files (most are close-on-exec already).
            csystem_spawn_close_from(&actions, Self.reportDescriptor + 1),
            posix_spawnattr_setpgroup(&attributes, 0),
            // The parent's threads block signals of their own (the signal sources'): the child starts with none.
            csystem_spawn_default_signals(
                &attributes, Self.defaultSignals, Int32(Self.defaultSignals.count), Int16(POSIX_SPAWN_SETPGROUP)),
        ]
        if let failed = prepared.first(where: { $0 != 0 }) {
            return .failure(
                TransformFailure(.transformFailed, "cannot prepare the SVG renderer's spawn: \(Self.reason(failed))"))
        }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        return state.withLock { state in
            guard !state.killed else {
                return .failure(TransformFailure(.expired, "stopped before the SVG renderer was started"))
            }
            var pid: pid_t = 0
            let error = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
            guard error == 0 else {
                return .failure(
                    TransformFailure(
                        .transformFailed, "cannot start the SVG renderer '\(executable)': \(Self.reason(error))"))
            }
            state.pid = pid
            return .success(pid)
        }
    }

    /// A wait status as Linux encodes it (the C macros WIFEXITED and friends are not imported).
    private static func ending(_ status: Int32) -> Ending {
        let signal = status & 0x7F
        return signal == 0 ? .exited((status >> 8) & 0xFF) : .signalled(signal)
    }

    /// What the (ended) child wrote: read to the end, at most `maximumReport` bytes.
    private static func drain(_ descriptor: Int32) -> [UInt8] {
        var report: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while report.count < maximumReport {
            let count = read(descriptor, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            report += buffer[..<min(count, maximumReport - report.count)]
        }
        return report
    }

    /// The system's wording of an errno.
    static func reason(_ error: Int32) -> String { String(cString: strerror(error)) }
}
