import Dispatch
import RichPush
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Writes to a file descriptor without buffering (each call is written whole at once), so a result line is
/// out as soon as it is due.
enum Output {
    /// Writes all of `bytes` to `descriptor`; false when the reader has gone (EPIPE) or the write failed. With
    /// `countingResults`, in parts of at most `resultPart` bytes, each counted in `resultBytes` once written (what
    /// `exitWhenResultsBlocked` watches: a blocking write returns only once all it was given is taken, so a slow
    /// reader's progress inside one large write would not show).
    @discardableResult
    static func write(_ bytes: [UInt8], to descriptor: Int32 = 1, countingResults: Bool = false) -> Bool {
        var offset = 0
        let part = countingResults ? resultPart : Int.max
        while offset < bytes.count {
            let count = bytes[offset..<min(bytes.count, offset &+ part)].withUnsafeBytes {
                Glibc.write(descriptor, $0.baseAddress, $0.count)
            }
            if count < 0 {
                if errno == EINTR { continue }
                // A descriptor another process set non-blocking (a shared pipe): wait until it takes more, as a
                // blocking one would, where the first EAGAIN lost every result after it.
                if errno == EAGAIN, FileDescriptorWait.writable(descriptor) { continue }
                return false
            }
            offset += count
            if countingResults { resultBytes.add(count, ordering: .releasing) }
        }
        return true
    }

    /// Writes results to standard output for a command that must say when they are lost: true when written; false
    /// when not, with `failure` given why unless the reader has gone (EPIPE: `| head` took what it wanted, and the
    /// command stops reading, as before).
    static func writeResults(_ bytes: [UInt8], failure: StreamFailure) -> Bool {
        guard !outputWasClosed.load(ordering: .relaxed) else {
            failure.record("it was closed when the command started")
            return false
        }
        writingResults.store(true, ordering: .releasing)
        let written = write(bytes, countingResults: true)
        let error = errno
        writingResults.store(false, ordering: .releasing)
        if written { return true }
        if error != EPIPE { failure.record(String(cString: strerror(error))) }
        return false
    }

    /// Whether standard output was closed when the process started (`>&-`).
    private static let outputWasClosed = Atomic<Bool>(false)

    /// Opens /dev/null in place of each standard descriptor the process started without (`>&-`, `2>&-`), so that
    /// none the process opens later (a socket, an eventfd) becomes descriptor 1 or 2 and takes results or log
    /// lines: with standard output closed, `stream`'s event loop got descriptor 1 and a write of results failed
    /// with "Invalid argument". Results are then lost, and said to be (`writeResults`). First thing at start.
    static func claimStandardDescriptors() {
        for descriptor: Int32 in 0...2 where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
            // The lowest free descriptor: this one, those below it being open (or just opened).
            let opened = open("/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY)
            if opened != descriptor, opened >= 0 {
                _ = dup2(opened, descriptor)
                close(opened)
            }
            if descriptor == 1 { outputWasClosed.store(true, ordering: .relaxed) }
        }
    }

    /// Whether a write of results to standard output is in progress, and how many bytes of results have been
    /// written: what `exitWhenResultsBlocked` watches.
    private static let writingResults = Atomic<Bool>(false)
    private static let resultBytes = Atomic<Int>(0)
    /// The most bytes of results one `write` is given: 16 KiB, so that a reader taking 16 KB a second shows progress.
    private static let resultPart = 16 * 1024

    /// From `timeout` after a drain began until the process ends, exits it with 74 (`EX_IOERR`), saying so, once
    /// a write of results has been in progress for `patience` without a byte taken (standard output a pipe nobody
    /// reads): a blocking `write` nothing else interrupts held the drain past its timeout until the reader went. A
    /// reader that takes bytes, however slowly, is waited for. Watched every 100 ms on Dispatch's threads, never the
    /// concurrency pool's.
    static func exitWhenResultsBlocked(afterDrain timeout: Duration, patience: Duration = .seconds(1)) {
        let start = DispatchTime.now() + .milliseconds(min(max(timeout, .zero), .furthestDeadline).inMilliseconds)
        DispatchQueue.global().asyncAfter(deadline: start) { watch(ended: -1, since: nil, patience: patience) }
    }

    /// One look of `exitWhenResultsBlocked`: `ended` bytes had been written at the last, and a write has been in
    /// progress since `since` without another byte.
    private static func watch(ended: Int, since: ContinuousClock.Instant?, patience: Duration) {
        let now = ContinuousClock.now
        let done = resultBytes.load(ordering: .acquiring)
        let blocked: ContinuousClock.Instant?
        if !writingResults.load(ordering: .acquiring) || done != ended {
            blocked = nil
        } else if let since {
            guard now - since < patience else {
                // Said only where standard error takes it now: it may be the same pipe, which would hold the exit.
                var stderr = pollfd(fd: 2, events: Int16(POLLOUT), revents: 0)
                if poll(&stderr, 1, 0) == 1, stderr.revents & Int16(POLLOUT) != 0 {
                    let text =
                        "richpush: standard output took nothing for \(patience) after the drain timeout; "
                        + "the results from there on are lost\n"
                    _ = text.utf8CString.withUnsafeBufferPointer {
                        Glibc.write(2, $0.baseAddress, $0.count - 1)
                    }
                }
                _exit(74)
            }
            blocked = since
        } else {
            blocked = now
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100)) {
            watch(ended: done, since: blocked, patience: patience)
        }
    }

    /// Announces on standard error that `address` (`HOST:PORT`, as given) listens, on `port` as bound (port 0
    /// asks for any): `{"listening": "HOST:PORT"}`.
    static func listening(_ address: String, port: Int) {
        let host = address[..<(address.lastIndex(of: ":") ?? address.endIndex)]
        write(JSONWriter.bytes(.object(JSONObject([("listening", .text("\(host):\(port)"))]))) + [0x0A], to: 2)
    }

    /// Writes a line to standard error.
    static func error(_ text: String) {
        write(Array((text.hasSuffix("\n") ? text : text + "\n").utf8), to: 2)
    }

    /// Writes `bytes` to `path` atomically: a temporary file beside it, then rename. The temporary name holds the
    /// final one when both fit a file name's 255 bytes (it adds 42: a name of 214 bytes or more lost its result to
    /// `ENAMETOOLONG`), else the random part alone.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws {
        let name = Path.lastComponent(path)
        let temporary =
            Path.directory(path) + "/." + (name.utf8.count <= 200 ? name + "." : "") + RandomName.uuid() + ".tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw POSIXFailure("open \(temporary)", errno) }
        let written = write(bytes, to: descriptor)
        let code = errno
        let closed = close(descriptor) == 0
        guard written, closed else {
            unlink(temporary)
            throw POSIXFailure("write \(temporary)", code)
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw POSIXFailure("rename to \(path)", code)
        }
    }
}

/// The first failure of a standard stream, if there was one: results not written to standard output (a full disk, a
/// descriptor that fails, `> /dev/full`: every result after it lost, where the command exited 0 in silence), or
/// standard input not read (a directory, a connection reset: the lines read whole before it were processed, where
/// the command exited 0 as at the input's end).
final class StreamFailure: Sendable {
    enum Stream: Sendable {
        case input, output
    }

    private let stream: Stream
    private let reason = Mutex<String?>(nil)

    init(_ stream: Stream) { self.stream = stream }

    func record(_ text: String) { reason.withLock { $0 = $0 ?? text } }

    /// Says on standard error what failed and returns 74 (`EX_IOERR`); nil when nothing did.
    func exitStatus() -> Int32? {
        guard let reason = reason.withLock({ $0 }) else { return nil }
        switch stream {
        case .output:
            Output.error(
                "richpush: cannot write results to standard output: \(reason); the results from there on are lost")
        case .input:
            Output.error("richpush: cannot read standard input: \(reason); the lines from there on were not processed")
        }
        return 74
    }
}
