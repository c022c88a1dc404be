import RichPushHTTP
import Testing

@testable import RichPushServer

/// The service's requests and their `--max-in-flight` slots, as events in and answers out (no I/O).
@Suite struct RequestLedgerTests {
    let now = ContinuousClock.now

    @Test("an upload takes its slot at its headers; the request past the last slot is refused and not recorded")
    func uploadsTakeSlots() {
        var ledger = RequestLedger(limit: 2)
        let first = ledger.admit(1, method: "POST", path: "/v1/enrich", requestID: "a", at: now)
        let second = ledger.admit(2, method: "POST", path: "/v1/enrich", requestID: nil, at: now)
        let third = ledger.admit(3, method: "POST", path: "/v1/enrich", requestID: nil, at: now)
        #expect(first && second && !third)
        #expect(ledger.slots == 2)
        #expect(ledger.entries[3] == nil)
        #expect(ledger.entries[1]?.stage == .receiving)
        #expect(ledger.entries[1]?.requestID == "a")
    }

    @Test("a request that ends in its upload frees its slot; one whose work began leaves it to the work")
    func slotFollowsTheWork() {
        var ledger = RequestLedger(limit: 2)
        _ = ledger.admit(1, method: "POST", path: "/v1/enrich", requestID: nil, at: now)
        _ = ledger.admit(2, method: "POST", path: "/v1/enrich", requestID: nil, at: now)
        // 1: the client goes mid-upload.
        let gone = ledger.complete(1)
        #expect(gone?.stage == .receiving)
        #expect(ledger.slots == 1)
        // 2: its body is in; the work outlives the request (a stream whose client went).
        let began = ledger.beginWork(2, requestID: "id-2")
        #expect(began)
        #expect(ledger.slots == 1, "the slot passed to the work, none taken")
        #expect(ledger.entries[2]?.stage == .processing)
        #expect(ledger.entries[2]?.requestID == "id-2")
        ledger.responding(2, stream: ResponseStream())
        #expect(ledger.entries[2]?.stage == .sending)
        let ended = ledger.complete(2)
        #expect(ended != nil)
        #expect(ledger.slots == 1, "the work still holds its slot")
        #expect(!ledger.isIdle)
        ledger.endWork()
        #expect(ledger.slots == 0)
        #expect(ledger.isIdle)
    }

    @Test("answered requests take no slot; work without a slot of its own takes a free one, or is refused")
    func answeredAndUnadmitted() {
        var ledger = RequestLedger(limit: 1)
        ledger.answered(1, method: "GET", path: "/healthz", at: now)
        #expect(ledger.slots == 0)
        #expect(ledger.entries[1]?.stage == .sending)
        let taken = ledger.beginWork(2, requestID: "x")
        let refused = ledger.beginWork(3, requestID: "y")
        #expect(taken && !refused)
        #expect(ledger.slots == 1)
        let once = ledger.complete(1)
        let twice = ledger.complete(1)
        #expect(once != nil && twice == nil)
        ledger.endWork()
        #expect(ledger.isIdle)
    }
}
