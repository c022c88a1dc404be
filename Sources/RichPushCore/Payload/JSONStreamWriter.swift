/// Writes compact JSON text straight into bytes, value by value: what building a `PushPayload.JSON` of the same
/// members and writing it with `JSONWriter` gives, byte for byte, without making the tree (its arrays of members,
/// its strings of numbers). For output made in code on a hot path (a result line per payload).
///
/// The writer puts the commas: a key, a value or an opening bracket is preceded by one when a value came before it
/// in the same object or array. Keys are static text that needs no escape; strings get `JSONWriter`'s minimal
/// escapes; integers are written as `String(_:)` writes them; a `PushPayload.JSON` (a payload's content, a member
/// rarely there) is written by `JSONWriter` in place.
package struct JSONStreamWriter {
    /// The text so far.
    package private(set) var bytes: [UInt8] = []
    /// Whether a value came last in the object or array open (so the next key or element needs a comma).
    private var afterValue = false

    /// A writer whose buffer holds `capacity` bytes before it grows.
    package init(capacity: Int) {
        bytes.reserveCapacity(capacity)
    }

    /// `{`, opening an object (as a value: after a key, as an element, or at the top).
    package mutating func openObject() { open(UInt8(ascii: "{")) }

    /// `}`, closing the object open; it is then a value written.
    package mutating func closeObject() { close(UInt8(ascii: "}")) }

    /// `[`, opening an array.
    package mutating func openArray() { open(UInt8(ascii: "[")) }

    /// `]`, closing the array open; it is then a value written.
    package mutating func closeArray() { close(UInt8(ascii: "]")) }

    /// A member's key and its colon; its value is written next. `key` needs no escape (plain ASCII, no quote,
    /// no backslash, no control character): the output's own names.
    package mutating func key(_ key: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
        afterValue = false
    }

    /// A string value, with the minimal escapes (as `JSONWriter` writes a string made in code).
    package mutating func string(_ value: String) {
        separate()
        JSONWriter.writeString(value, into: &bytes)
        afterValue = true
    }

    /// An integer value, in decimal, as `String(value)` (and so `PushPayload.JSON.integer`) writes it.
    package mutating func integer(_ value: Int) {
        separate()
        JSONWriter.writeInteger(value, into: &bytes)
        afterValue = true
    }

    /// A number of tenths as a decimal with one digit after the point (`125` as `12.5`, `3` as `0.3`), as
    /// `"\(tenths / 10).\(tenths % 10)"` writes it.
    package mutating func tenths(_ tenths: Int) {
        separate()
        JSONWriter.writeInteger(tenths / 10, into: &bytes)
        bytes.append(UInt8(ascii: "."))
        JSONWriter.writeInteger(tenths % 10, into: &bytes)
        afterValue = true
    }

    /// `true` or `false`.
    package mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
        afterValue = true
    }

    /// `null`.
    package mutating func null() {
        separate()
        bytes.append(contentsOf: "null".utf8)
        afterValue = true
    }

    /// Any JSON value, as `JSONWriter` writes it (a parsed one as it was written, without white space).
    package mutating func value(_ value: PushPayload.JSON) {
        separate()
        JSONWriter.write(value, into: &bytes)
        afterValue = true
    }

    /// A member whose value is a string.
    package mutating func member(_ key: StaticString, _ value: String) {
        self.key(key)
        string(value)
    }

    /// A member whose value is an integer.
    package mutating func member(_ key: StaticString, _ value: Int) {
        self.key(key)
        integer(value)
    }

    /// A member whose value is any JSON value.
    package mutating func member(_ key: StaticString, _ value: PushPayload.JSON) {
        self.key(key)
        self.value(value)
    }

    /// Bytes that are not JSON (a line's newline), as they are; the next value is not preceded by a comma.
    package mutating func raw(_ byte: UInt8) {
        bytes.append(byte)
        afterValue = false
    }

    private mutating func open(_ bracket: UInt8) {
        separate()
        bytes.append(bracket)
        afterValue = false
    }

    private mutating func close(_ bracket: UInt8) {
        bytes.append(bracket)
        afterValue = true
    }

    private mutating func separate() {
        if afterValue { bytes.append(UInt8(ascii: ",")) }
    }
}
