import RichPush
import RichPushHTTP
import Testing

@testable import RichPushServer

/// The service's requests and which holds a `--max-in-flight` slot, as events in and answers out (no I/O); the
/// slots are counted by a `WorkGate`, driven here as the service drives it.
@Suite struct RequestLedgerTests {
    let now = ContinuousClock.now

    @Test(
        """
        an upload holds its slot from its headers; the request past the last slot is refused by the gate and not \
        recorded
        """
    )
    func uploadsTakeSlots() {
        let gate = WorkGate(limit: 2)
        var ledger = RequestLedger()
        for number: UInt64 in 1...3 where gate.admit() == .admitted {
            ledger.admitted(number, method: "POST", path: "/v1/enrich", requestID: number == 1 ? "a" : nil, at: now)
        }
        #expect(gate.inside == 2)
        #expect(ledger.entries[3] == nil)
        #expect(ledger.entries[1]?.stage == .receiving)
        #expect(ledger.entries[1]?.holdsSlot == true)
        #expect(ledger.entries[1]?.requestID == "a")
    }

    @Test("a request that ends in its upload gives its slot back; one whose work began leaves it to the work")
    func slotFollowsTheWork() {
        var ledger = RequestLedger()
        ledger.admitted(1, method: "POST", path: "/v1/enrich", requestID: nil, at: now)
        ledger.admitted(2, method: "POST", path: "/v1/enrich", requestID: nil, at: now)
        // 1: the client goes mid-upload: the caller frees the slot it held.
        let gone = ledger.complete(1)
        #expect(gone?.stage == .receiving)
        #expect(gone?.holdsSlot == true)
        // 2: its body is in; the work outlives the request (a stream whose client went).
        let held = ledger.beginWork(2, requestID: "id-2")
        #expect(held, "the slot passed to the work")
        #expect(ledger.entries[2]?.holdsSlot == false)
        #expect(ledger.entries[2]?.stage == .processing)
        #expect(ledger.entries[2]?.requestID == "id-2")
        ledger.responding(2, stream: ResponseStream())
        #expect(ledger.entries[2]?.stage == .sending)
        let ended = ledger.complete(2)
        #expect(ended?.holdsSlot == false, "the work still holds its slot")
        #expect(ledger.entries.isEmpty)
    }

    @Test("answered requests hold no slot; work without a slot of its own must take one; a request completes once")
    func answeredAndUnadmitted() {
        var ledger = RequestLedger()
        ledger.answered(1, method: "GET", path: "/healthz", at: now)
        #expect(ledger.entries[1]?.holdsSlot == false)
        #expect(ledger.entries[1]?.stage == .sending)
        let held = ledger.beginWork(2, requestID: "x")
        #expect(!held)
        let once = ledger.complete(1)
        let twice = ledger.complete(1)
        #expect(once != nil && twice == nil)
    }
}
