/// A four-character code, as an MP4's box types, a RIFF's or IFF's chunk ids and a PNG's chunk types are: four bytes,
/// read big-endian into a `UInt32`.
enum FourCharacterCode {
    /// Whether each of the bytes of `code` is printable ASCII (0x20 to 0x7E), as every box type and chunk id is.
    static func isPrintable(_ code: UInt32) -> Bool {
        (0..<4).allSatisfy { (0x20...0x7E).contains(UInt8(truncatingIfNeeded: code >> (8 * UInt32($0)))) }
    }

    /// The bytes of `code`, as text.
    static func text(_ code: UInt32) -> String {
        String(decoding: bytes(code), as: UTF8.self)
    }

    /// `code` as a detail shows it: quoted when printable, else in hex.
    static func quoted(_ code: UInt32) -> String {
        isPrintable(code) ? "'\(text(code))'" : "0x" + bytes(code).map { $0.hexDigits }.joined()
    }

    private static func bytes(_ code: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: code >> UInt32(24 - 8 * $0)) }
    }
}
