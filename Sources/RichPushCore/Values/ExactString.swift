/// A string compared and hashed byte for byte, for the keys that must be exact: media URLs above all. Swift
/// compares and hashes `String`s by Unicode canonical equivalence, so `.../caf\u{E9}.png` and `.../cafe\u{301}.png`,
/// different bytes on the wire and different files on a server, were one URL: one fetch for both in a payload, one
/// cache entry serving the first's bytes under the second's URL, one published copy rewriting both.
package struct ExactString: Hashable, Sendable {
    package let text: String

    package init(_ text: String) { self.text = text }

    package static func == (lhs: Self, rhs: Self) -> Bool { same(lhs.text, rhs.text) }

    package func hash(into hasher: inout Hasher) {
        // The same bytes whichever path: contiguous UTF-8 (every native string), else copied out.
        let hashed: Void? = text.utf8.withContiguousStorageIfAvailable {
            hasher.combine(bytes: UnsafeRawBufferPointer($0))
        }
        if hashed == nil { Array(text.utf8).withUnsafeBytes { hasher.combine(bytes: $0) } }
    }

    /// Whether `a` and `b` are the same bytes.
    package static func same(_ a: String, _ b: String) -> Bool { a.utf8.elementsEqual(b.utf8) }
}
