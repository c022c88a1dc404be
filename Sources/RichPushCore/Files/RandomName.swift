#if canImport(Glibc)
    import Glibc
#endif

/// Names for directories and files: random version-4 UUIDs in lowercase, from glibc's arc4random_buf, which in
/// Debian 12's glibc 2.36 is a `getrandom` system call each time (4,006 calls for 2,000 attachments under
/// `strace -c`). Drawing 4 KiB at a time under a lock instead was tried: campaign CPU 0.300 against 0.295 s in ten
/// alternated runs, not worth a generator of our own.
///
/// Foundation's `UUID().uuidString` formats through vsnprintf; at two names per attachment that showed in the
/// campaign profile. Names stay UUIDs so that `gc` can recognise what is ours.
package enum RandomName {
    private static let hex = Array("0123456789abcdef".utf8)

    /// A new random UUID string, `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`.
    package static func uuid() -> String {
        var bytes = (UInt64(0), UInt64(0))
        withUnsafeMutableBytes(of: &bytes) { buffer in
            arc4random_buf(buffer.baseAddress!, 16)
            buffer[6] = (buffer[6] & 0x0F) | 0x40
            buffer[8] = (buffer[8] & 0x3F) | 0x80
        }
        return withUnsafeBytes(of: bytes) { raw in
            var text = [UInt8]()
            text.reserveCapacity(36)
            for (index, byte) in raw.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
                text.append(hex[Int(byte >> 4)])
                text.append(hex[Int(byte & 0x0F)])
            }
            return String(decoding: text, as: UTF8.self)
        }
    }

    /// Whether `name` has the shape of a UUID (8-4-4-4-12 hexadecimal digits), as the store names things.
    package static func isUUID(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                let isHex =
                    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20)
                guard isHex else { return false }
            }
        }
        return true
    }
}
