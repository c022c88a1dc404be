/// The value of one hex digit, or nil; capitals only when `lowercaseOnly` is false. Inlinable: the service's index of
/// attachments reads 128 digits a result, and a call for each showed in its profile.
@inlinable package func hexValue(_ digit: UInt8, lowercaseOnly: Bool) -> UInt8? {
    switch digit {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F") where !lowercaseOnly: return digit - UInt8(ascii: "A") + 10
    default: return nil
    }
}

extension UInt8 {
    /// The byte as two uppercase hex digits (`hexValue`'s other way), as the media walks' verdicts name a marker, a
    /// code or a byte: for messages, not for a hot path.
    package var hexDigits: String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(self >> 4)], digits[Int(self & 0xF)]])
    }
}
