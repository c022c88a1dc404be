/// A value type's stored fields kept in one box that its copies share, copied when a copy that shares it changes (as
/// `Array` keeps its elements): the value is one pointer, however many fields it has.
///
/// For the values held across the suspensions of many async functions at once (`FetchedMedia`, `FetchFailure`):
/// every one of those functions' frames keeps a slot for each value it holds across a suspension, in the task's
/// memory, for as long as the function runs; inline, a 353-byte `FetchedMedia` held a few times in each function of an
/// attachment's way made those frames 7-12 KB, ~40 KB for every reference waiting for its origin. Copies cost a retain
/// (not one of each string), a change to a shared box one allocation.
///
/// Equal and hashed as its fields are, so that a type made of it is equal and hashed as it was with the fields inline.
package struct SharedFields<Fields: Hashable & Sendable>: Sendable, Hashable {
    /// The box, shared by copies until one of them changes (`fields`' `_modify`).
    private final class Box: @unchecked Sendable {
        // Sendable as `Fields` is: a box is changed only through `fields`, and only while no other value holds it.
        var fields: Fields

        init(_ fields: Fields) {
            self.fields = fields
        }
    }

    private var box: Box

    /// Fields kept in a box of their own.
    package init(_ fields: Fields) {
        box = Box(fields)
    }

    /// The fields: read in the shared box (borrowed: reading one field copies that field alone); changed in this
    /// value's own box, copied first when shared.
    package var fields: Fields {
        _read { yield box.fields }
        _modify {
            if !isKnownUniquelyReferenced(&box) { box = Box(box.fields) }
            yield &box.fields
        }
    }

    /// The mirror of `subject`, the value made of these fields: its fields as a struct's are shown (`dump`, a log
    /// line, a test's failed expectation), rather than its box; for the value's `CustomReflectable.customMirror`.
    package func mirror(of subject: Any) -> Mirror {
        Mirror(subject, children: Mirror(reflecting: box.fields).children, displayStyle: .struct)
    }

    /// Equal when they share a box, else as their fields are.
    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.box === rhs.box || lhs.box.fields == rhs.box.fields
    }

    /// Hashes the fields alone, as the value did with them inline.
    package func hash(into hasher: inout Hasher) {
        box.fields.hash(into: &hasher)
    }
}
