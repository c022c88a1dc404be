/// Decides when a transfer's handle goes into the multi handle, so that curl's own queue of transfers waiting
/// for a connection stays short: per origin, at most `limit` transfers are in curl without having started (no
/// connection yet); the others wait here, first come first served, and go in as those start or leave.
///
/// Why not leave the waiting to curl (CURLMOPT_MAX_HOST_CONNECTIONS queues them itself): curl 7.88's
/// `curl_multi_remove_handle` walks its whole queue of waiting transfers on every removal. With 8,000 transfers
/// to one slow origin (16 connections, 7,984 waiting) expiring together, that walk was 95% of the loop's time at
/// expiry (`perf annotate`): ~180 ms in all, the payloads' results that late. A transfer that expires in this
/// queue costs no curl call at all.
///
/// An origin is keyed by the URL's scheme and authority as written, lowercased: two spellings of one host are
/// two origins (curl keys its connections by the host name as written too), which only lets more wait in curl.
/// A transfer that leaves while queued stays in its origin's queue until the queue reaches it, and is skipped.
struct AdmissionQueue {
    /// The most transfers of one origin in the multi handle that have not started.
    let limit: Int
    private var unstarted: [String: Int] = [:]
    private var waiting: [String: FIFO] = [:]
    /// Origins with transfers waiting that may have room since the last `admitted`.
    private var roomy: Set<String> = []

    init(limit: Int) { self.limit = max(1, limit) }

    /// Asks to put transfer `id` of `origin` into the multi handle: true if it may go now (it then counts as not
    /// started until `release`), false if it waits (`admitted` hands it out later).
    mutating func request(_ id: UInt64, origin: String) -> Bool {
        // An origin with a queue is at its limit, or in `roomy`: the queue goes first.
        if waiting[origin] == nil, unstarted[origin, default: 0] < limit {
            unstarted[origin, default: 0] += 1
            return true
        }
        waiting[origin, default: FIFO()].append(id)
        return false
    }

    /// A transfer of `origin` admitted earlier has started (it has a connection) or left the multi handle
    /// before starting: one more of that origin may go in.
    mutating func release(origin: String) {
        guard let count = unstarted[origin] else { return }
        unstarted[origin] = count > 1 ? count - 1 : nil
        if waiting[origin] != nil { roomy.insert(origin) }
    }

    /// The waiting transfers that may go now, each counted as not started; `isWaiting` tells which queued ids
    /// still want to go (the others are dropped).
    mutating func admitted(_ isWaiting: (UInt64) -> Bool) -> [UInt64] {
        var ids: [UInt64] = []
        for origin in roomy {
            guard var queue = waiting.removeValue(forKey: origin) else { continue }
            var count = unstarted[origin, default: 0]
            while count < limit, let id = queue.popFirst() {
                guard isWaiting(id) else { continue }
                ids.append(id)
                count += 1
            }
            unstarted[origin] = count == 0 ? nil : count
            if !queue.isEmpty { waiting[origin] = queue }
        }
        roomy.removeAll(keepingCapacity: true)
        return ids
    }

    /// The key of a URL's origin: its scheme and authority as written, lowercased.
    static func origin(of url: String) -> String {
        let bytes = url.utf8
        // Checked URLs start `scheme://`: the authority begins after the first colon and two slashes.
        let colon = bytes.firstIndex(of: UInt8(ascii: ":")) ?? bytes.endIndex
        let authority = bytes.index(colon, offsetBy: 3, limitedBy: bytes.endIndex) ?? bytes.endIndex
        let end = bytes[authority...].firstIndex {
            $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
        }
        return String(url[..<(end ?? bytes.endIndex)]).lowercased()
    }

    /// A first-in first-out queue of ids: an array read from a moving head, compacted once half of it is read.
    private struct FIFO {
        private var items: [UInt64] = []
        private var head = 0

        var isEmpty: Bool { head == items.count }

        mutating func append(_ id: UInt64) { items.append(id) }

        mutating func popFirst() -> UInt64? {
            guard head < items.count else { return nil }
            defer {
                head += 1
                if head > 1024, head * 2 > items.count {
                    items.removeFirst(head)
                    head = 0
                }
            }
            return items[head]
        }
    }
}
