import RichPushCore

@testable import RichPushMedia

/// What a structure's verdict says, without its detail (printed as its case's name).
enum VerdictKind: Equatable {
    case whole, showsPart, showsNothing, unbounded

    init(_ verdict: MediaStructure.Verdict) {
        switch verdict {
        case .whole: self = .whole
        case .showsPart: self = .showsPart
        case .showsNothing: self = .showsNothing
        case .unbounded: self = .unbounded
        }
    }
}

/// A structure walk fed as the digest feeds it, in pieces.
enum StructureFeeding {
    /// The walk of `bytes` fed in pieces of `piece` bytes (all at once when nil).
    static func walked(_ bytes: [UInt8], _ type: MediaType, piece: Int? = nil) -> MediaStructure {
        var structure = MediaStructure(type)!
        bytes.withUnsafeBytes { all in
            let step = max(piece ?? all.count, 1)
            for start in stride(from: 0, to: all.count, by: step) {
                structure.feed(UnsafeRawBufferPointer(rebasing: all[start..<min(start + step, all.count)]))
            }
        }
        return structure
    }

    /// The verdict on `bytes` fed in pieces of `piece` bytes (all at once when nil).
    static func verdict(_ bytes: [UInt8], _ type: MediaType, piece: Int? = nil) -> MediaStructure.Verdict {
        walked(bytes, type, piece: piece).verdict
    }
}
