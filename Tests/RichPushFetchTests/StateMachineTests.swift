import RichPushTestSupport
import Testing

@testable import RichPushFetch

@Suite("Register-versus-cancel state machine")
struct StateMachineTests {
    @Test("register, then cancel: start, then cancel the transfer once")
    func registerThenCancel() {
        var state = RegistrationState()
        #expect(state.register() == .start)
        #expect(state.cancel() == .cancelTransfer)
        #expect(state.cancel() == .none)
    }

    @Test("cancel before register: the transfer never starts")
    func cancelFirst() {
        var state = RegistrationState()
        #expect(state.cancel() == .none)
        #expect(state.register() == .finishCancelled)
        #expect(state.cancel() == .none)
    }

    @Test("registering twice never starts twice")
    func doubleRegister() {
        var state = RegistrationState()
        #expect(state.register() == .start)
        #expect(state.register() == .finishCancelled)
    }
}

@Suite("Deadline queue")
struct DeadlineQueueTests {
    /// An order in which to insert 500 deadlines, 0 to 999 ms after a base (duplicates included).
    enum Insertion: Sendable {
        case shuffled(seed: UInt64)
        case ascending
        case descending

        var offsets: [Int] {
            var generator = SplitMix64(seed: 7)
            if case .shuffled(let seed) = self { generator = SplitMix64(seed: seed) }
            let offsets = (0..<500).map { _ in Int.random(in: 0..<1000, using: &generator) }
            switch self {
            case .shuffled: return offsets
            case .ascending: return offsets.sorted()
            case .descending: return offsets.sorted(by: >)
            }
        }
    }

    @Test(
        "pops due deadlines in order, keeps the rest, for any insertion order",
        arguments: [Insertion.shuffled(seed: 1), .shuffled(seed: 2), .shuffled(seed: 3), .ascending, .descending])
    func order(insertion: Insertion) {
        let base = ContinuousClock.now
        var queue = DeadlineQueue()
        let offsets = insertion.offsets
        for (id, offset) in offsets.enumerated() { queue.insert(base + .milliseconds(offset), id: UInt64(id)) }
        #expect(queue.next == base + .milliseconds(offsets.min()!))
        let due = queue.popDue(base + .milliseconds(499))
        let expected = offsets.enumerated().filter { $0.element <= 499 }.sorted { $0.element < $1.element }
        #expect(due.map { offsets[Int($0)] } == expected.map(\.element))
        #expect(queue.count == 500 - due.count)
        #expect(queue.next.map { $0 > base + .milliseconds(499) } ?? true)
        #expect(queue.popDue(base + .seconds(2)).count == 500 - due.count)
        #expect(queue.next == nil)
    }

    @Test("compaction keeps exactly the live deadlines, in order")
    func compaction() {
        let base = ContinuousClock.now
        var queue = DeadlineQueue()
        for id in 0..<100 { queue.insert(base + .milliseconds(id), id: UInt64(id)) }
        let live = (0..<100).filter { $0 % 10 == 0 }.map { (base + .milliseconds($0), UInt64($0)) }
        queue.compact(keeping: live.reversed())
        #expect(queue.count == 10)
        #expect(queue.popDue(base + .seconds(1)) == live.map(\.1))
    }
}

@Suite("Admission queue")
struct AdmissionQueueTests {
    @Test("at most the limit of an origin goes in; the rest go in first come first served as room is made")
    func limitAndOrder() {
        var queue = AdmissionQueue(limit: 2)
        #expect((1...5).map { queue.request($0, origin: "http://a") } == [true, true, false, false, false])
        #expect(queue.admitted { _ in true } == [])
        queue.release(origin: "http://a")
        #expect(queue.admitted { _ in true } == [3])
        queue.release(origin: "http://a")
        queue.release(origin: "http://a")
        #expect(queue.admitted { _ in true } == [4, 5])
        #expect(queue.admitted { _ in true } == [])
        // Five admitted, three released: the origin holds two; a sixth waits.
        #expect(queue.request(6, origin: "http://a") == false)
    }

    @Test("an origin at its limit holds no other origin")
    func originsAreIndependent() {
        var queue = AdmissionQueue(limit: 1)
        #expect(queue.request(1, origin: "http://slow") == true)
        #expect(queue.request(2, origin: "http://slow") == false)
        #expect(queue.request(3, origin: "http://fast") == true)
        queue.release(origin: "http://fast")
        #expect(queue.admitted { _ in true } == [])
        #expect(queue.request(4, origin: "http://fast") == true)
    }

    @Test("transfers that left while queued are skipped and take no room")
    func leftWhileQueued() {
        var queue = AdmissionQueue(limit: 2)
        for id in 1...6 { _ = queue.request(UInt64(id), origin: "http://a") }
        queue.release(origin: "http://a")
        queue.release(origin: "http://a")
        let gone: Set<UInt64> = [3, 5]
        #expect(queue.admitted { !gone.contains($0) } == [4, 6])
        queue.release(origin: "http://a")
        queue.release(origin: "http://a")
        // Nothing left waiting: the next one goes in at once.
        #expect(queue.request(7, origin: "http://a") == true)
    }

    @Test("an https origin lets in one transfer until a response proves it; then its waiters go in under the limit")
    func gateOpensOnResponse() {
        var queue = AdmissionQueue(limit: 2)
        #expect((1...4).map { queue.request($0, origin: "https://a") } == [true, false, false, false])
        // Plain http is never gated.
        #expect((5...7).map { queue.request($0, origin: "http://a") } == [true, true, false])
        // The pilot has a connection: room under the limit, but the gate holds.
        queue.release(origin: "https://a")
        #expect(queue.admitted { _ in true } == [])
        #expect(queue.hasRoom == false)
        queue.proved(origin: "https://a", multiplexed: false)
        #expect(queue.hasRoom)
        #expect(queue.admitted { _ in true } == [2, 3])
        // The queue goes first; the limit holds as before the gate.
        #expect(queue.request(8, origin: "https://a") == false)
        queue.release(origin: "https://a")
        #expect(queue.admitted { _ in true } == [4])
        // Proven for good: the pilot leaving after its response changes nothing, and nothing waits any more.
        queue.left(1, origin: "https://a", curlEnded: true)
        queue.release(origin: "https://a")
        queue.release(origin: "https://a")
        #expect(queue.admitted { _ in true } == [8])
        queue.release(origin: "https://a")
        #expect(queue.request(9, origin: "https://a") == true)
        #expect(queue.request(10, origin: "https://a") == true)
    }

    @Test("a pilot cancelled or expired hands the gate to the next waiter still waiting")
    func gatePassesOn() {
        var queue = AdmissionQueue(limit: 4)
        #expect((1...4).map { queue.request($0, origin: "https://a") } == [true, false, false, false])
        // A waiter that leaves is not the pilot: the gate stays shut.
        queue.left(2, origin: "https://a", curlEnded: false)
        #expect(queue.admitted { _ in true } == [])
        // The pilot has its connection: the gate holds.
        queue.release(origin: "https://a")
        #expect(queue.admitted { _ in true } == [])
        // It expires before its response; 2 left while queued, so 3 is the next pilot, alone.
        queue.left(1, origin: "https://a", curlEnded: false)
        #expect(queue.admitted { $0 != 2 } == [3])
        #expect(queue.isGated("https://a"))
        // 3 is cancelled after it has its connection; 4 takes the gate and is proven.
        queue.release(origin: "https://a")
        queue.left(3, origin: "https://a", curlEnded: false)
        #expect(queue.admitted { _ in true } == [4])
        queue.proved(origin: "https://a", multiplexed: true)
        #expect(queue.isGated("https://a") == false)
        #expect(queue.request(5, origin: "https://a") == true)
    }

    @Test("a pilot that curl ends without a response opens its origin: its waiters go in together")
    func gateOpensOnFailure() {
        var queue = AdmissionQueue(limit: 4)
        #expect((1...5).map { queue.request($0, origin: "https://down") } == [true, false, false, false, false])
        // Another origin's gate is its own.
        #expect((6...7).map { queue.request($0, origin: "https://up") } == [true, false])
        queue.release(origin: "https://down")
        queue.left(1, origin: "https://down", curlEnded: true)
        #expect(queue.admitted { _ in true } == [2, 3, 4, 5])
        #expect(queue.isGated("https://down") == false)
        #expect(queue.isGated("https://up"))
    }

    @Test("a redirect's next hop is gated by its own origin")
    func gateAcrossRedirect() {
        var queue = AdmissionQueue(limit: 4)
        #expect(queue.request(1, origin: "https://a") == true)
        #expect(queue.request(2, origin: "https://a") == false)
        // 1's 302 proves a; it leaves a and asks for b, whose pilot it becomes.
        queue.proved(origin: "https://a", multiplexed: false)
        queue.release(origin: "https://a")
        queue.left(1, origin: "https://a", curlEnded: true)
        #expect(queue.request(1, origin: "https://b") == true)
        #expect(queue.request(3, origin: "https://b") == false)
        #expect(queue.admitted { _ in true } == [2])
        // b's pilot is cancelled: 3 takes b's gate.
        queue.left(1, origin: "https://b", curlEnded: false)
        #expect(queue.admitted { _ in true } == [3])
    }

    @Test("past the capacity, the origin proven longest ago is forgotten and gated again")
    func provenIsBounded() {
        var queue = AdmissionQueue(limit: 4, provenCapacity: 2)
        for (id, origin) in zip(UInt64(1)..., ["https://a", "https://b", "https://c"]) {
            #expect(queue.request(id, origin: origin) == true)
            queue.release(origin: origin)
            queue.proved(origin: origin, multiplexed: false)
        }
        #expect(queue.isGated("https://a"))
        #expect(queue.isGated("https://b") == false)
        #expect(queue.isGated("https://c") == false)
        #expect(queue.request(4, origin: "https://a") == true)
        #expect(queue.request(5, origin: "https://a") == false)
        // Proving a again forgets b, the oldest now.
        queue.proved(origin: "https://a", multiplexed: false)
        #expect(queue.isGated("https://b"))
        #expect(queue.admitted { _ in true } == [5])
    }

    @Test("PIPEWAIT over TLS until an origin's first response comes over HTTP/1.x; never over plain http")
    func pipeWait() {
        var queue = AdmissionQueue(limit: 4)
        #expect(queue.pipeWait(for: "https://a"))
        #expect(queue.pipeWait(for: "http://a") == false)
        #expect(queue.request(1, origin: "https://a") == true)
        queue.proved(origin: "https://a", multiplexed: false)
        #expect(queue.pipeWait(for: "https://a") == false)
        #expect(queue.request(2, origin: "https://b") == true)
        queue.proved(origin: "https://b", multiplexed: true)
        #expect(queue.pipeWait(for: "https://b"))
        // A pilot that failed in curl tells nothing of the protocol: its origin waits to multiplex, as before.
        #expect(queue.request(3, origin: "https://c") == true)
        queue.left(3, origin: "https://c", curlEnded: true)
        #expect(queue.isGated("https://c") == false)
        #expect(queue.pipeWait(for: "https://c"))
        // The first response decides.
        queue.proved(origin: "https://a", multiplexed: true)
        #expect(queue.pipeWait(for: "https://a") == false)
    }

    @Test(
        "an origin is the scheme and authority as written, lowercased",
        arguments: [
            ("https://CDN.Example.com/a/b.jpg", "https://cdn.example.com"),
            ("http://127.0.0.1:8080?x=1", "http://127.0.0.1:8080"),
            ("https://[::1]:8443#f", "https://[::1]:8443"),
            ("https://h", "https://h"),
        ])
    func origin(url: String, origin: String) {
        #expect(AdmissionQueue.origin(of: url) == origin)
    }
}
