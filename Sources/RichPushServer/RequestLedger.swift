import RichPushHTTP

/// The service's requests from their headers to their end, what each is doing, and which of them holds a slot of
/// `--max-in-flight`. A state machine without I/O or lock: the service keeps it under its lock and does what it
/// answers; the slots themselves are the service's admission gate's (`WorkGate`).
///
/// A request whose body is to be read takes a slot when its headers are in, before a byte of the body is read
/// (`admitted`, once the gate let it in): an upload counts against `--max-in-flight` from its first byte, and the
/// request after the last slot is refused at once. When the body is in, the slot passes to the request's work
/// (`beginWork`), which frees it when it ends; a request that ends without reaching its work (the client went during
/// the upload, the body was too large) frees it when it ends (`complete` says so). Work may outlive its request:
/// the NDJSON results of a client that has gone are cancelled, and the slot is free once that is done.
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
        /// Whether the request holds a slot not yet passed to its work (and one of its tenant's, with one).
        var holdsSlot = false
        /// The tenant its token selected, under `serve --tenants`: it runs under this one to its end.
        var tenant: Tenant? = nil
    }

    private(set) var entries: [UInt64: Entry] = [:]

    init() {}

    /// A request answered from its headers alone (health, metrics, a refusal, an attachment): it is sending until
    /// it ends.
    mutating func answered(
        _ number: UInt64, method: String, path: String, at instant: ContinuousClock.Instant, tenant: Tenant? = nil
    ) {
        entries[number] = Entry(method: method, path: path, started: instant, stage: .sending, tenant: tenant)
    }

    /// A request whose body is to be read, let in by the gate, holds a slot (`requestID`: the one the client gave,
    /// if any).
    mutating func admitted(
        _ number: UInt64, method: String, path: String, requestID: String?, at instant: ContinuousClock.Instant,
        tenant: Tenant? = nil
    ) {
        entries[number] = Entry(
            method: method, path: path, started: instant, stage: .receiving, requestID: requestID, holdsSlot: true,
            tenant: tenant)
    }

    /// The request's work begins: true when its slot passes to the work (the work frees it when it ends); false when
    /// it holds none (which `head` never lets happen), and the work must take one from the gate or not run.
    mutating func beginWork(_ number: UInt64, requestID: String) -> Bool {
        update(number) { entry in
            let held = entry.holdsSlot
            entry.holdsSlot = false
            entry.stage = .processing
            entry.requestID = requestID
            return held
        } ?? false
    }

    /// The request's response is made: from now on it is being sent (an NDJSON response, with its stream, while its
    /// work goes on).
    mutating func responding(_ number: UInt64, stream: ResponseStream?) {
        update(number) { entry in
            entry.stage = .sending
            entry.stream = stream
        }
    }

    /// Changes request `number`'s entry in place, if it has one: what `change` returns, or nil without an entry.
    /// One look-up: each `entries[number]?.field = value` looked the entry up, copied it out (retaining its
    /// strings, its tenant and its stream, in a buffer allocated for it) and wrote it back, which showed in the
    /// service's profile: `respond`'s sections under the ledger's lock went from about 2% to 0.45% of its samples
    /// at 64 connections, one payload a request (about 2.4 us to 0.6 a request).
    @discardableResult
    private mutating func update<Result>(_ number: UInt64, _ change: (inout Entry) -> Result) -> Result? {
        guard let index = entries.index(forKey: number) else { return nil }
        return change(&entries.values[index])
    }

    /// The request is over (answered, or its connection gone): its entry goes; the caller frees the slot it still
    /// held (`holdsSlot`), if any.
    mutating func complete(_ number: UInt64) -> Entry? {
        // Most requests answered from the head have no entry: with none at all, nothing to hash.
        entries.isEmpty ? nil : entries.removeValue(forKey: number)
    }
}
