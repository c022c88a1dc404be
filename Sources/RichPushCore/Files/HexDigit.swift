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
