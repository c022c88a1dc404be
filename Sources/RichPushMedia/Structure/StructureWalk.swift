/// One type's walk, as a state machine: `step` takes what it can of the bytes from `index` on, `feed` runs it
/// over a piece and counts the piece's bytes, `verdict` says what the bytes fed add up to.
protocol StructureWalk {
    /// The bytes fed before the current piece: a position in the file is `offset + index`.
    var offset: Int { get set }
    /// Takes bytes of `bytes` from `index` on (at least one, `index` < `bytes.count`), moving `index` past them;
    /// false when the walk looks at nothing more of this piece (it needs none, or the next piece).
    mutating func step(_ bytes: UnsafeRawBufferPointer, _ index: inout Int) -> Bool
    /// The verdict on the bytes fed, taken as the whole file.
    var verdict: MediaStructure.Verdict { get }
    /// The canvas and the frames the bytes fed declare, for the pixel limit, when the walk reads them (GIF, PNG);
    /// nil for a JPEG (its first bytes give its size) and before the walk has read them.
    var declared: ImageHeader? { get }
}

extension StructureWalk {
    /// By default, nothing is declared beyond what the first bytes say.
    var declared: ImageHeader? { nil }

    /// Takes the next piece of the file.
    mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        var index = 0
        while index < bytes.count, step(bytes, &index) {}
        offset += bytes.count
    }
}
