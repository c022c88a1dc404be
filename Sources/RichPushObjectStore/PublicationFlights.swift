import RichPushCore
import RichPushMedia

/// The publications of one publisher by key: the keys it published lately (asked for again, they are answered at
/// once, with no request to the store), and the ones being published now, with everyone waiting for each (a
/// campaign's payloads meet the same image at once: one `HEAD` and at most one `PUT` serve them all).
final class PublicationFlights: Sendable {
    typealias Completion = @Sendable (Result<String, PublishFailure>) -> Void

    /// What a caller asking for a key does.
    enum Join: Equatable {
        /// Published lately, at this URL: nothing to do.
        case published(String)
        /// Nobody publishes it now: publish it, then `finish`.
        case lead(UInt64)
        /// Someone publishes it now: wait (the completion is called by their `finish`, or `abandon`).
        case follow(UInt64)
    }

    private struct State {
        var running: [String: [UInt64: Completion]] = [:]
        var published: [String: (url: String, until: ContinuousClock.Instant)] = [:]
        var nextID: UInt64 = 0
    }

    private let state = LockedValue(State())
    /// How long a published key is remembered.
    let memory: Duration
    /// The most keys remembered; past it, the expired ones are forgotten, then all if none had expired.
    let capacity: Int

    init(memory: Duration, capacity: Int) {
        self.memory = memory
        self.capacity = capacity
    }

    /// Asks for `key`, with the completion to call when it is published (or not): `leader` when this caller is to
    /// publish it, `follower` when it waits for another's publication.
    func join(_ key: String, leader: @escaping Completion, follower: @escaping Completion) -> Join {
        let now = ContinuousClock.now
        return state.withLock { state in
            if let known = state.published[key] {
                if known.until > now { return .published(known.url) }
                state.published[key] = nil
            }
            state.nextID += 1
            let id = state.nextID
            if state.running[key] != nil {
                state.running[key]![id] = follower
                return .follow(id)
            }
            state.running[key] = [id: leader]
            return .lead(id)
        }
    }

    /// The publication of `key` ended: every caller still waiting for it is answered with `outcome` (called here,
    /// outside the lock), and a published URL is remembered.
    func finish(_ key: String, _ outcome: Result<String, PublishFailure>) {
        let now = ContinuousClock.now
        let waiting = state.withLock { state -> [Completion] in
            if case .success(let url) = outcome, memory > .zero {
                if state.published.count >= capacity {
                    state.published = state.published.filter { $0.value.until > now }
                    if state.published.count >= capacity { state.published = [:] }
                }
                state.published[key] = (url, now + memory)
            }
            return state.running.removeValue(forKey: key).map { Array($0.values) } ?? []
        }
        for completion in waiting { completion(outcome) }
    }

    /// Takes caller `id` of `key` out of the waiting (its deadline came): its completion, to answer it with, or nil
    /// when it was answered already.
    func abandon(_ key: String, _ id: UInt64) -> Completion? {
        state.withLock { $0.running[key]?.removeValue(forKey: id) }
    }

    /// Keys being published now (tests).
    var running: Int { state.withLock { $0.running.count } }
}
