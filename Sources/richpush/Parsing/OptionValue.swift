/// How an option's text becomes its value, and how help shows the value's kind, its range and a default.
///
/// Numeric values are range-checked before any conversion, so that no input (NaN, an infinity, a negative, 1e16)
/// reaches one that traps; a value outside is a usage error naming the option and the range, the range help shows.
struct OptionValue<Value> {
    /// The value's placeholder in help and usage (`seconds`).
    let placeholder: String
    /// The accepted values as help and messages write them (`from 0.001 to 86400`), or nil when any text is.
    let range: String?
    /// The value of one argument of `--option` (the name without dashes, for messages).
    let parse: (_ text: String, _ option: String) throws(UsageError) -> Value
    /// A value as help shows it, as a default.
    let describe: (Value) -> String
}

extension OptionValue where Value == String {
    /// Any text: a path, a key, an address checked later.
    static func text(_ placeholder: String) -> Self {
        Self(placeholder: placeholder, range: nil, parse: { text, _ in text }, describe: { $0 })
    }
}

extension OptionValue where Value: RawRepresentable & CaseIterable, Value.RawValue == String {
    /// One of the words `Value`'s cases are spelled as.
    static func word(_ placeholder: String) -> Self {
        let accepted = "one of " + Value.allCases.map(\.rawValue).joined(separator: ", ")
        return Self(
            placeholder: placeholder, range: accepted,
            parse: { text, option throws(UsageError) in
                guard let value = Value(rawValue: text) else {
                    throw UsageError("--\(option): expected \(accepted), got '\(text)'")
                }
                return value
            },
            describe: { $0.rawValue })
    }
}

extension OptionValue where Value == Int {
    /// A whole number of `unit` within `range`.
    static func whole(_ unit: String, in range: ClosedRange<Int>, placeholder: String = "n") -> Self {
        let accepted = "from \(range.lowerBound) to \(range.upperBound)"
        return Self(
            placeholder: placeholder, range: accepted,
            parse: { text, option throws(UsageError) in
                guard let number = Int(text), range.contains(number) else {
                    throw UsageError("--\(option): expected a whole number of \(unit) \(accepted), got '\(text)'")
                }
                return number
            },
            describe: { String($0) })
    }
}

extension OptionValue where Value == Duration {
    /// A number of seconds, fractions allowed, within `range`, kept to the millisecond; `note` follows the range in
    /// messages (what the ends mean).
    static func seconds(in range: ClosedRange<Duration>, note: String = "") -> Self {
        let bounds = range.lowerBound.inSeconds...range.upperBound.inSeconds
        let accepted = "from \(number(bounds.lowerBound)) to \(number(bounds.upperBound))"
        return Self(
            placeholder: "seconds", range: accepted,
            parse: { text, option throws(UsageError) in
                // Decimal digits and a point alone: Double parses "nan", "inf", exponents and hexadecimal too
                // ("0x10" was 16 seconds).
                guard !text.isEmpty, text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
                    let seconds = Double(text), bounds.contains(seconds)
                else {
                    throw UsageError("--\(option): expected a number of seconds \(accepted)\(note), got '\(text)'")
                }
                return .milliseconds(Int64((seconds * 1000).rounded()))
            },
            describe: { number($0.inSeconds) })
    }

    /// A number as help and messages write it: `86400`, not `86400.0`; `0.001`.
    private static func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int64(value)) : String(value)
    }
}
