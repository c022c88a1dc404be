import CSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Names for directories and files: random version-4 UUIDs in lowercase, from the kernel's random bytes
/// (`getrandom`), drawn 4 KiB at a time (`RandomBytes`): glibc 2.36's `arc4random_buf` (Debian 12's) is a
/// `getrandom` system call each time, two for every attachment (4,006 calls for 2,000 under `strace -c`), and
/// the call with the kernel's generator was 2-3% of `stream`'s CPU on a campaign of 400,000 payloads.
///
/// Foundation's `UUID().uuidString` formats through vsnprintf; at two names per attachment that showed in the
/// campaign profile. Names stay UUIDs so that `gc` can recognise what is ours.
package enum RandomName {
    private static let hex = Array("0123456789abcdef".utf8)

    /// A new random UUID string, `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`.
    package static func uuid() -> String {
        var bytes = (UInt64(0), UInt64(0))
        withUnsafeMutableBytes(of: &bytes) { buffer in
            RandomBytes.fill(buffer)
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

/// The kernel's random bytes (`getrandom`), drawn `poolSize` at a time and handed out once each: a name costs a
/// copy under a lock rather than a system call. A byte handed out is zeroed in the pool, so the pool never holds
/// what a name was made of. When `getrandom` fails (it cannot on Linux 3.17 and later once the generator is
/// seeded, which the kernel does before user space starts), each request falls back to `arc4random_buf`.
package enum RandomBytes {
    /// Bytes drawn at a time: 256 names of 16 bytes, one system call.
    static let poolSize = 4096

    private struct Pool {
        var bytes = [UInt8](repeating: 0, count: RandomBytes.poolSize)
        /// Bytes of `bytes` already handed out (all of them at first: the first request draws).
        var used = RandomBytes.poolSize
        /// How many times the pool was drawn (tests read it).
        var draws = 0

        /// Draws a new pool; false when the kernel refused.
        mutating func draw() -> Bool {
            var filled = 0
            let size = bytes.count
            let complete = bytes.withUnsafeMutableBytes { buffer -> Bool in
                while filled < size {
                    let count = csystem_random(buffer.baseAddress! + filled, size - filled)
                    if count > 0 {
                        filled += count
                    } else if count < 0, errno == EINTR {
                        continue
                    } else {
                        return false
                    }
                }
                return true
            }
            guard complete else { return false }
            used = 0
            draws += 1
            return true
        }
    }

    private static let pool = LockedValue(Pool())

    /// Fills `buffer` (at most `poolSize` bytes) with random bytes.
    package static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        precondition(buffer.count <= poolSize)
        let filled = pool.withLock { pool -> Bool in
            if pool.used + buffer.count > pool.bytes.count {
                guard pool.draw() else { return false }
            }
            pool.bytes.withUnsafeMutableBytes { bytes in
                let start = bytes.baseAddress! + pool.used
                buffer.baseAddress!.copyMemory(from: start, byteCount: buffer.count)
                start.initializeMemory(as: UInt8.self, repeating: 0, count: buffer.count)
            }
            pool.used += buffer.count
            return true
        }
        if !filled { arc4random_buf(buffer.baseAddress!, buffer.count) }
    }

    /// How many times the pool was drawn from the kernel so far.
    package static var draws: Int { pool.withLock { $0.draws } }
}
