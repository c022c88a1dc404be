import RichPush

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

    /// Writes `bytes` to `path` atomically: a temporary file beside it, then rename.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws {
        let temporary = Path.directory(path) + "/." + Path.lastComponent(path) + "." + RandomName.uuid() + ".tmp"
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
