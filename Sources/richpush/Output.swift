import RichPush
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Writes to a file descriptor without buffering (each call is written whole at once), so a result line is
/// out as soon as it is due.
enum Output {
    /// Writes all of `bytes` to `descriptor`; false when the reader has gone (EPIPE) or the write failed.
    @discardableResult
    static func write(_ bytes: [UInt8], to descriptor: Int32 = 1) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += count
        }
        return true
    }

    /// Writes results to standard output for a command that must say when they are lost: true when written; false
    /// when not, with `failure` given why unless the reader has gone (EPIPE: `| head` took what it wanted, and the
    /// command stops reading, as before).
    static func writeResults(_ bytes: [UInt8], failure: ResultsLost) -> Bool {
        if write(bytes) { return true }
        let error = errno
        if error != EPIPE { failure.record(String(cString: strerror(error))) }
        return false
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

/// Why results were not written to standard output (the first failure), if they were not: a full disk or a
/// descriptor that fails (`> /dev/full`) lost every result after it, and the command exited 0 in silence.
final class ResultsLost: Sendable {
    private let reason = Mutex<String?>(nil)

    func record(_ text: String) { reason.withLock { $0 = $0 ?? text } }

    /// Says on standard error that results were lost and returns 74 (`EX_IOERR`); nil when none were.
    func exitStatus() -> Int32? {
        guard let reason = reason.withLock({ $0 }) else { return nil }
        Output.error("richpush: cannot write results to standard output: \(reason); the results from there on are lost")
        return 74
    }
}
