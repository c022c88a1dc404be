#if canImport(Glibc)
    import Glibc
#endif

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

    /// Whether `a` and `b` are the same bytes: their lengths, then one `memcmp` of their UTF-8 (`withUTF8` makes a
    /// string contiguous first where it is not). `elementsEqual` walked the two byte by byte, and a dictionary's
    /// lookup compares the key with every occupied bucket it probes: the media cache's URLs of one host share their
    /// first 30 bytes or more (0.4% of (h)'s CPU over HTTP/2).
    package static func same(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        var a = a
        var b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in x.isEmpty || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 }
        }
    }
}
