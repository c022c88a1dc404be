/// An entry of the input stream as the worker reads it: its id and the two fields it uses, each within its cap.
/// No other field is held, so an entry takes at most the payload limit (and a few bytes) whatever it holds.
package struct StreamEntry: Sendable, Equatable {
    package enum Payload: Sendable, Equatable {
        /// No `payload` field (or the entry was deleted since it was delivered).
        case missing
        case bytes([UInt8])
        /// A payload longer than the limit: its length. Its bytes were read and dropped as they arrived.
        case tooLarge(Int)
    }

    package var id: String
    package var payload: Payload
    /// The `deadline` field's text, when the entry has one of at most `deadlineLimit` bytes.
    package var deadline: String?
    /// The length of a `deadline` field longer than `deadlineLimit` bytes (not kept: no number of seconds is that
    /// long), so that the entry is refused as one with a bad deadline rather than run as if it had none.
    package var oversizedDeadline: Int? = nil

    /// The longest `deadline` kept: a number of seconds is a few bytes; a longer field is not one.
    static let deadlineLimit = 64
    /// The longest id kept: Redis's are at most 41 bytes (two 64-bit numbers and a dash).
    static let idLimit = 64
}

/// The replies that bring entries, read field by field: the `payload` kept when it is at most `payloadLimit` bytes
/// (else measured only), `deadline` kept when short, every other field skipped; and no more than the `most`
/// entries asked for (`COUNT`), so that what a reply holds is bounded by `most` times the payload limit.
extension RESPReader {
    /// XREADGROUP's reply: null (nothing came before the block ended), or for each stream `[name, [entry, ...]]`.
    mutating func streamsReply(payloadLimit: Int, most: Int) throws(RedisError) -> [StreamEntry] {
        switch try header() {
        case .null:
            return []
        case .array(let streams):
            var entries: [StreamEntry] = []
            for _ in 0..<streams {
                guard case .array(2) = try header() else {
                    throw Self.protocolError("a stream that is not [name, entries]")
                }
                try skipValue()
                entries += try entryList(payloadLimit: payloadLimit, most: most - entries.count)
            }
            return entries
        case let other:
            throw Self.unexpected(other)
        }
    }

    /// XAUTOCLAIM's reply: `[next id, [entry, ...], [deleted id, ...]]` (Redis 7; 6.2 has no third element).
    mutating func autoclaimReply(payloadLimit: Int, most: Int) throws(RedisError) -> [StreamEntry] {
        let header = try header()
        guard case .array(let count) = header, count >= 2 else { throw Self.unexpected(header) }
        try skipValue()
        let entries = try entryList(payloadLimit: payloadLimit, most: most)
        for _ in 2..<count { try skipValue() }
        return entries
    }

    /// XCLAIM's reply: `[entry, ...]`, each null for an entry deleted since it was delivered (Redis 6.2; Redis 7
    /// leaves it out, and out of the pending entries).
    mutating func claimReply(payloadLimit: Int, most: Int) throws(RedisError) -> [StreamEntry?] {
        switch try header() {
        case .array(let count):
            guard count <= most else { throw Self.protocolError("more entries than asked for") }
            var entries: [StreamEntry?] = []
            for _ in 0..<count {
                let header = try header()
                entries.append(header == .null ? nil : try entry(opening: header, payloadLimit: payloadLimit))
            }
            return entries
        case let other:
            throw Self.unexpected(other)
        }
    }

    private mutating func entryList(payloadLimit: Int, most: Int) throws(RedisError) -> [StreamEntry] {
        switch try header() {
        case .null:
            return []
        case .array(let count):
            guard count <= most else { throw Self.protocolError("more entries than asked for") }
            var entries: [StreamEntry] = []
            for _ in 0..<count { entries.append(try entry(payloadLimit: payloadLimit)) }
            return entries
        case let other:
            throw Self.unexpected(other)
        }
    }

    /// One entry, `[id, [field, value, ...]]`; the fields are null for an entry deleted since it was delivered.
    private mutating func entry(payloadLimit: Int) throws(RedisError) -> StreamEntry {
        try entry(opening: try header(), payloadLimit: payloadLimit)
    }

    /// One entry whose first header was read (`opening`).
    private mutating func entry(opening: Header, payloadLimit: Int) throws(RedisError) -> StreamEntry {
        guard case .array(2) = opening, case .bulk(let length) = try header(), length <= StreamEntry.idLimit,
            let id = try body(length, keep: true)
        else { throw Self.protocolError("an entry that is not [id, fields]") }
        var entry = StreamEntry(id: String(decoding: id, as: UTF8.self), payload: .missing, deadline: nil)
        switch try header() {
        case .null:
            return entry
        case .array(let count):
            for _ in 0..<count / 2 { try field(into: &entry, payloadLimit: payloadLimit) }
            if count % 2 == 1 { try skipValue() }
            return entry
        case let other:
            throw Self.unexpected(other)
        }
    }

    /// A field's name and value: the first `payload` and the first short `deadline` go into `entry`.
    private mutating func field(into entry: inout StreamEntry, payloadLimit: Int) throws(RedisError) {
        var name: [UInt8]? = nil
        let nameHeader = try header()
        if case .bulk(let length) = nameHeader {
            name = try body(length, keep: length <= 8)
        } else {
            try skip(after: nameHeader)
        }
        let value = try header()
        switch (name, value) {
        case (Self.payloadName?, .bulk(let length)) where entry.payload == .missing:
            let bytes = try body(length, keep: length <= payloadLimit)
            entry.payload = bytes.map { .bytes($0) } ?? .tooLarge(length)
        case (Self.deadlineName?, .bulk(let length)) where entry.deadline == nil && entry.oversizedDeadline == nil:
            guard length <= StreamEntry.deadlineLimit else {
                entry.oversizedDeadline = length
                try skip(after: value)
                return
            }
            entry.deadline = try body(length, keep: true).map { String(decoding: $0, as: UTF8.self) }
        default:
            try skip(after: value)
        }
    }

    private static var payloadName: [UInt8] { Array("payload".utf8) }
    private static var deadlineName: [UInt8] { Array("deadline".utf8) }

    /// An error reply is the server's answer (`reply`); any other shape means the connection is out of step.
    private static func unexpected(_ header: Header) -> RedisError {
        if case .error(let message) = header {
            return RedisError(reply: String(decoding: message, as: UTF8.self))
        }
        return protocolError("an unexpected reply")
    }
}
