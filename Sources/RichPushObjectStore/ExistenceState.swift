/// What `ExistenceCheck.auto` has learnt of the store: whether keys the publisher meets are there already. Uploads
/// are conditional (`If-None-Match: *`, no `HEAD`) after `missesBeforeConditional` `HEAD`s in a row found nothing,
/// every `probeEvery`th still asked with a `HEAD`; a `HEAD` that finds its key, or a 412, goes back to `HEAD`s.
struct ExistenceState {
    static let missesBeforeConditional = 16
    static let probeEvery = 256

    /// `HEAD`s in a row that found nothing.
    private(set) var misses = 0
    /// Conditional uploads since the last `HEAD`.
    private var sinceProbe = 0

    /// Whether the next upload is conditional (no `HEAD` before it).
    mutating func nextIsConditional() -> Bool {
        guard misses >= Self.missesBeforeConditional, sinceProbe + 1 < Self.probeEvery else {
            sinceProbe = 0
            return false
        }
        sinceProbe += 1
        return true
    }

    /// A `HEAD` found nothing under its key.
    mutating func missed() { misses += 1 }

    /// A key was there (a `HEAD` found it, or a conditional upload was answered 412).
    mutating func found() {
        misses = 0
        sinceProbe = 0
    }
}
