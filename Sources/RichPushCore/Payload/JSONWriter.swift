/// Writes a `PushPayload.JSON` as compact JSON text: no white space, members in order, numbers and parsed string
/// literals exactly as they were read, other strings with the minimal escapes.
public enum JSONWriter {
    /// The JSON text of `value`, as UTF-8 bytes.
    public static func bytes(_ value: PushPayload.JSON) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        write(value, into: &output)
        return output
    }

    /// The JSON text of `value`.
    public static func string(_ value: PushPayload.JSON) -> String {
        String(decoding: bytes(value), as: UTF8.self)
    }

    static func write(_ value: PushPayload.JSON, into output: inout [UInt8]) {
        switch value {
        case .object(let object):
            switch object.storage {
            case .parsed(let document, let index):
                write(document, index, into: &output)
            case .built(let members):
                writeList(members, open: UInt8(ascii: "{"), into: &output) { member, output in
                    write(member.key, into: &output)
                    output.append(UInt8(ascii: ":"))
                    write(member.value, into: &output)
                }
            }
        case .array(let array):
            switch array.storage {
            case .parsed(let document, let index):
                write(document, index, into: &output)
            case .built(let elements):
                writeList(elements, open: UInt8(ascii: "["), into: &output) { write($0, into: &$1) }
            }
        case .string(let string):
            write(string, into: &output)
        case .number(let text):
            output.append(contentsOf: text.utf8)
        case .bool(let flag):
            output.append(contentsOf: (flag ? "true" : "false").utf8)
        case .null:
            output.append(contentsOf: "null".utf8)
        }
    }

    /// `items` between the `open` bracket and its closing one, separated by commas.
    static func writeList<Item>(
        _ items: [Item], open: UInt8, into output: inout [UInt8], _ writeItem: (Item, inout [UInt8]) -> Void
    ) {
        output.append(open)
        for (index, item) in items.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            writeItem(item, &output)
        }
        // The closing bracket is the opening one plus two, in ASCII.
        output.append(open + 2)
    }

    /// The value at tape entry `index` of `document`, compact: its text whole when the document is compact, else
    /// each token as it was written, without the white space.
    static func write(_ document: JSONDocument, _ index: Int, into output: inout [UInt8]) {
        if document.isCompact {
            output.append(contentsOf: document.text[document.compactText(index)])
            return
        }
        document.text.withUnsafeBufferPointer { text in
            document.tape.withUnsafeBufferPointer { tape in
                _ = TapeWalk(text: text, tape: tape).write(index, into: &output)
            }
        }
    }

    /// A parsed string (value or key) as it was written; one made in code with the minimal escapes.
    static func write(_ string: JSONString, into output: inout [UInt8]) {
        switch string.storage {
        case .text(let text): writeString(text, into: &output)
        case .parsed(let document, let index): output.append(contentsOf: document.text[document.token(index)])
        }
    }

    /// `value` in decimal, as `String(value)` writes it, without making the string.
    package static func writeInteger(_ value: Int, into output: inout [UInt8]) {
        if value < 0 { output.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        // 20 digits hold any UInt64; written from the last digit back.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude != 0
            output.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    package static func writeString(_ string: String, into output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        // Most strings (paths, URLs, codes) need no escape: scan their contiguous UTF-8 once, copy them whole.
        var text = string
        let copied = text.withUTF8 { bytes -> Bool in
            for byte in bytes where byte < 0x20 || byte == 0x22 || byte == 0x5C { return false }
            output.append(contentsOf: bytes)
            return true
        }
        if copied {
            output.append(UInt8(ascii: "\""))
            return
        }
        for byte in string.utf8 {
            switch byte {
            case 0x22: output.append(contentsOf: [0x5C, 0x22])
            case 0x5C: output.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: output.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0x00..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                output.append(contentsOf: [
                    0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)],
                ])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}

/// Writes a value of a document that has white space, token by token along the tape.
private struct TapeWalk {
    let text: UnsafeBufferPointer<UInt8>
    let tape: UnsafeBufferPointer<UInt32>

    /// Writes the value at `index`; returns the entry just past it.
    func write(_ index: Int, into output: inout [UInt8]) -> Int {
        let entry = tape[index]
        let start = Int(entry & ~JSONDocument.escapedFlag)
        let lead = text[start]
        guard lead == UInt8(ascii: "{") || lead == UInt8(ascii: "[") else {
            let end = JSONDocument.tokenEnd(in: text, at: start, escaped: entry & JSONDocument.escapedFlag != 0)
            output.append(contentsOf: UnsafeBufferPointer(rebasing: text[start..<end]))
            return index + 1
        }
        let end = Int(tape[index + 1])
        output.append(lead)
        var child = index + 2
        while child < end {
            if child > index + 2 { output.append(UInt8(ascii: ",")) }
            if lead == UInt8(ascii: "{") {
                child = write(child, into: &output)
                output.append(UInt8(ascii: ":"))
            }
            child = write(child, into: &output)
        }
        // The closing bracket is the opening one plus two, in ASCII.
        output.append(lead + 2)
        return end
    }
}
