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
