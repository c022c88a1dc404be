import RichPushHTTP

/// The service's requests from their headers to their end, what each is doing, and the slots of
/// `--max-in-flight` they hold. A state machine without I/O or lock: the service keeps it under its lock and
/// does what it answers.
///
/// A request whose body is to be read takes a slot when its headers are in, before a byte of the body is read:
/// an upload counts against `--max-in-flight` from its first byte, and the request after the last slot is refused
/// at once. When the body is in, the slot passes to the request's work (`beginWork`), which frees it when it ends
/// (`endWork`); a request that ends without reaching its work (the client went during the upload, the body was too
/// large) frees it when it ends (`complete`). Work may outlive its request: the NDJSON results of a client that has
/// gone are cancelled, and the slot is free once that is done.
struct RequestLedger {
    /// What a request is doing.
    enum Stage: String, Sendable {
        /// Its body is being received.
        case receiving = "receiving-body"
        /// Its work is running; nothing is sent yet.
        case processing
        /// Its response is being sent (for NDJSON, made and sent).
        case sending = "sending-response"
    }

    struct Entry: Sendable {
        let method: String
        let path: String
        let started: ContinuousClock.Instant
        var stage: Stage
        var requestID: String? = nil
        /// The body being written, for an NDJSON response.
        var stream: ResponseStream? = nil
        /// Whether the request holds a slot not yet passed to its work.
        var holdsSlot = false
    }

    /// The most slots: `--max-in-flight`.
    let limit: Int
    private(set) var entries: [UInt64: Entry] = [:]
    /// Slots taken, by uploads and by work.
    private(set) var slots = 0

    init(limit: Int) { self.limit = limit }

    /// A request answered from its headers alone (health, metrics, a refusal, an attachment): it is sending until
    /// it ends.
    mutating func answered(_ number: UInt64, method: String, path: String, at instant: ContinuousClock.Instant) {
        entries[number] = Entry(method: method, path: path, started: instant, stage: .sending)
    }

    /// A request whose body is to be read takes a slot (`requestID`: the one the client gave, if any). False, and
    /// nothing is recorded, when every slot is taken.
    mutating func admit(
        _ number: UInt64, method: String, path: String, requestID: String?, at instant: ContinuousClock.Instant
    ) -> Bool {
        guard slots < limit else { return false }
        slots += 1
        entries[number] = Entry(
            method: method, path: path, started: instant, stage: .receiving, requestID: requestID, holdsSlot: true)
        return true
    }

    /// The request's work begins: its slot passes to the work. A request that holds none (which `head` never lets
    /// happen) takes a free one. False when there is none: the work must not run.
    mutating func beginWork(_ number: UInt64, requestID: String) -> Bool {
        if entries[number]?.holdsSlot == true {
            entries[number]?.holdsSlot = false
        } else {
            guard slots < limit else { return false }
            slots += 1
        }
        entries[number]?.stage = .processing
        entries[number]?.requestID = requestID
        return true
    }

    /// The request's response is made: from now on it is being sent (an NDJSON response, with its stream, while its
    /// work goes on).
    mutating func responding(_ number: UInt64, stream: ResponseStream?) {
        entries[number]?.stage = .sending
        entries[number]?.stream = stream
    }

    /// A request's work has ended: its slot is free.
    mutating func endWork() {
        precondition(slots > 0, "a slot freed twice")
        slots -= 1
    }

    /// The request is over (answered, or its connection gone): its entry goes, and the slot it still held, if any.
    mutating func complete(_ number: UInt64) -> Entry? {
        guard let entry = entries.removeValue(forKey: number) else { return nil }
        if entry.holdsSlot { slots -= 1 }
        return entry
    }

    /// Nothing in progress: no request, no work.
    var isIdle: Bool { entries.isEmpty && slots == 0 }
}
