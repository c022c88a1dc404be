/// When the worker's writer sends the results queued, and when a result queued wakes it.
///
/// Each script call costs Redis a round trip and the script's set-up, and each wake-up of the writer a futex
/// call and two context switches. When the writer took whatever was queued the moment a result arrived, bench (w)
/// measured about 7 results a call (13,591 calls for 100,000 entries), and the calls, not the entries, made most
/// of Redis's CPU beside the scripts' own work. So the writer waits, up to `linger`, until a batch is filled, and
/// a task that queues a result wakes it only when that result starts a batch or fills one.
struct WriteBatching: Sendable, Equatable {
    /// The most results in one script call. 128: one round trip for a burst, and a script that runs well under a
    /// millisecond, so Redis is never held.
    static let maximum = 128

    /// Results that fill a batch: half the entries in flight at most (`concurrency / 2`, at least 1, at most
    /// `maximum`), so that the other half keeps the engine busy while a batch is written, and the reader then
    /// takes a batch of new entries into the slots the written ones freed.
    let size: Int

    /// The longest a result waits for others to share its script call. 2 ms: a thousandth of the shortest
    /// deadline that makes sense for a fetch, and at bench (w)'s ~15,000 results a second, time for 30.
    let linger: Duration

    init(concurrency: Int, linger: Duration = .milliseconds(2)) {
        size = min(Self.maximum, max(1, concurrency / 2))
        self.linger = linger
    }

    /// Whether `queued` results, of `inFlight` entries read and not yet written, fill a batch: `size` of them, or
    /// every entry in flight (no other result is coming to share the call).
    func filled(queued: Int, inFlight: Int) -> Bool {
        queued >= size || queued >= inFlight
    }

    /// Whether the result that makes `queued` must wake the writer: it starts a batch (the writer starts its
    /// linger), or it fills one. Results in between wake no one.
    func wakesWriter(queued: Int, inFlight: Int) -> Bool {
        queued == 1 || (filled(queued: queued, inFlight: inFlight) && !filled(queued: queued - 1, inFlight: inFlight))
    }

    /// Whether the writer sends now: the batch is filled, or the oldest result queued (at `oldest`) has waited
    /// `linger`.
    func due(queued: Int, inFlight: Int, oldest: ContinuousClock.Instant, now: ContinuousClock.Instant) -> Bool {
        queued > 0 && (filled(queued: queued, inFlight: inFlight) || now >= oldest + linger)
    }
}
