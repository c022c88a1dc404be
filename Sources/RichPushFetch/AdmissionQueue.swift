/// Decides when a transfer's handle goes into the multi handle, so that curl's own queue of transfers waiting
/// for a connection stays short: per origin, at most `limit` transfers are in curl without having started (no
/// connection yet); the others wait here, first come first served, and go in as those start or leave.
///
/// Why not leave the waiting to curl (CURLMOPT_MAX_HOST_CONNECTIONS queues them itself): curl 7.88's
/// `curl_multi_remove_handle` walks its whole queue of waiting transfers on every removal. With 8,000 transfers
/// to one slow origin (16 connections, 7,984 waiting) expiring together, that walk was 95% of the loop's time at
/// expiry (`perf annotate`): ~180 ms in all, the payloads' results that late. A transfer that expires in this
/// queue costs no curl call at all, and one waiting here holds no easy handle: the loop makes it (or takes an idle
/// one) as the transfer is admitted.
///
/// **The TLS gate.** Until an https origin is proven, only one of its transfers (its pilot) is in the multi handle; the
/// rest wait here, and go in under `limit` once it is. Over HTTP/1.x, an origin is proven
/// (`proved(origin:multiplexed:)`) once its pilot's session can be resumed: a server sends its TLS 1.3
/// NewSessionTicket after the handshake, ahead of any response, and once OpenSSL has read it libcurl's new-session
/// callback has put the session in the loop's share (`ShareHandle`), so that every connection opened after it
/// resumes that session. The loop looks for the ticket
/// (`FetchLoop.lookForTickets`; over TLS 1.2 the session is there at the handshake's end); a response head proves the
/// origin too, and so does `FetchLoop.ticketWait` passing without a ticket. Over
/// HTTP/2 it is proven as soon as the pilot's connection agreed on h2 by ALPN (the loop asks OpenSSL in curl's
/// pre-request callback: `EasyHandle.agreedHTTP2`): the waiters then multiplex on that connection (PIPEWAIT) and need
/// no session, so they no longer wait for the pilot's response (a slow first byte, a CDN's cache miss). Without the
/// gate, the transfers waiting on the first connection (CURLOPT_PIPEWAIT) opened theirs as soon as its ALPN said
/// HTTP/1.1, before the ticket had been read: bench (h) over HTTP/1.1 (nginx, TLS 1.3, 4 host names, 64 at once)
/// resumed 78% of the connections after the first per host (75-100%; earlier runs 58-100%), curl's tool 60 of 60. With
/// it (and PIPEWAIT as below), 100% in the median of 9 runs (87-100%), against 98% (58-100%) for the build before it in
/// the same rounds and 100% (88-100%) for curl's tool: the misses left are libcurl's own (see `TLSTests`). Over HTTP/2
/// the others waited for the first connection already (PIPEWAIT), and wait here for no more than that: its handshake.
/// Plain http is never gated.
///
/// **PIPEWAIT only where it can multiplex** (`pipeWait(for:)`): once an origin's first response came over HTTP/1.x,
/// its transfers no longer wait for a connection that might multiplex. With PIPEWAIT, curl 7.88 lets one of them
/// open a connection and holds the rest until that one's handshake ends, then again for the next: connections
/// open in a chain, and those opened when the handshake before them ended offered a TLS 1.3 session the
/// connection before had just used, or none at all (against s_server, TLS 1.3, 5 fetches at once: 1 of 4 resumed
/// in 3 of 12 rounds with the gate and PIPEWAIT, in 3 of 80 without PIPEWAIT). An origin whose first response was
/// HTTP/2 keeps PIPEWAIT, so that its transfers multiplex on its connection while another is being opened.
///
/// A pilot that leaves unproven hands the gate on: cancelled or expired (`left(_:origin:curlEnded:)`), the next
/// waiter becomes the pilot; ended by curl without a response (refused, unreachable, a TLS failure, its connect
/// timeout), the origin counts as proven, so that its waiters fail (or succeed) together as they did before the
/// gate, rather than one connect timeout after another, and no session came of it to wait for. A proven origin stays
/// proven for the loop's life, within `provenCapacity` (the oldest forgotten first: its next transfers go through
/// the gate again, which costs one response's wait); the other per-origin maps hold only origins with transfers
/// in the loop. The gate keys origins as curl keys sessions, but for curl's TLS settings too: a tenant with another
/// CA bundle finds an origin proven by another's session, and its first connections open at once, as before.
///
/// An origin is keyed by the URL's scheme and authority as written, lowercased: two spellings of one host are
/// two origins (curl keys its connections by the host name as written too), which only lets more wait in curl.
/// A transfer that leaves while queued stays in its origin's queue until the queue reaches it, and is skipped.
struct AdmissionQueue {
    /// How many proven origins are kept: far more than a loop talks to at once (it holds at most
    /// `NetworkSettings.maximumConnections` connections, 64 by default), so that an origin in use is forgotten
    /// only after 4,096 others have been proven since; a few hundred KB of origin names at most.
    static let defaultProvenCapacity = 4096

    /// The most transfers of one origin in the multi handle that have not started.
    let limit: Int
    private var unstarted: [String: Int] = [:]
    private var waiting: [String: FIFO] = [:]
    /// Origins with transfers waiting that may have room since the last `admitted`.
    private var roomy: Set<String> = []
    /// Each unproven https origin with a transfer in the multi handle: that transfer's id (its pilot).
    private var pilots: [String: UInt64] = [:]
    /// The https origins that need no gate any more, each with whether its transfers wait to multiplex.
    private var proven: ProvenOrigins

    /// A queue letting in at most `limit` unstarted transfers per origin, keeping at most `provenCapacity` proven
    /// origins.
    init(limit: Int, provenCapacity: Int = Self.defaultProvenCapacity) {
        self.limit = max(1, limit)
        proven = ProvenOrigins(capacity: max(1, provenCapacity))
    }

    /// Whether transfers of `origin` go in one at a time: an https origin not yet proven.
    func isGated(_ origin: String) -> Bool {
        Self.isTLS(origin) && !proven.contains(origin)
    }

    /// Whether `origin` is an https one: the only kind gated, and the only kind that may multiplex here.
    private static func isTLS(_ origin: String) -> Bool { origin.utf8.starts(with: "https:".utf8) }

    /// Whether an origin may have room that `admitted` has not handed out yet: the loop must not sleep.
    var hasRoom: Bool { !roomy.isEmpty }

    /// CURLOPT_PIPEWAIT for a transfer of `origin` going in now: whether it waits for a connection that may
    /// multiplex (HTTP/2 via ALPN) rather than open another. Over TLS, unless the origin was proven over HTTP/1.x
    /// (see the type's comment); plain http is HTTP/1.1 here (no h2c), where waiting would only queue a transfer
    /// behind a slow one.
    func pipeWait(for origin: String) -> Bool {
        Self.isTLS(origin) && proven.multiplexes(origin) != false
    }

    /// Asks to put transfer `id` of `origin` into the multi handle: true if it may go now (it then counts as not
    /// started until `release`, and is the pilot of a gated origin), false if it waits (`admitted` hands it out
    /// later).
    mutating func request(_ id: UInt64, origin: String) -> Bool {
        // An origin with a queue is at its limit, gated, or in `roomy`: the queue goes first.
        if waiting[origin] == nil {
            let count = unstarted[origin, default: 0]
            if isGated(origin) {
                if pilots[origin] == nil, count < limit {
                    pilots[origin] = id
                    unstarted[origin] = count + 1
                    return true
                }
            } else if count < limit {
                unstarted[origin] = count + 1
                return true
            }
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

    /// A transfer of `origin` has received a response head, over HTTP/2 or later when `multiplexed` (its TLS session is
    /// in the share: see the type's comment), or its connection agreed on HTTP/2 (`multiplexed`; its waiters will share
    /// that connection): the origin is proven and its waiting transfers go in under `limit`. Plain http, and an origin
    /// proven already, are ignored.
    mutating func proved(origin: String, multiplexed: Bool) {
        guard isGated(origin) else { return }
        if let forgotten = proven.insert(origin, multiplexes: multiplexed), waiting[forgotten] != nil {
            // Gated again, it may take a pilot now.
            roomy.insert(forgotten)
        }
        pilots[origin] = nil
        if waiting[origin] != nil { roomy.insert(origin) }
    }

    /// Transfer `id` of `origin` has left the multi handle (or curl refused it). If it was the pilot of its
    /// still-unproven origin: with `curlEnded` (curl finished it without a response: its connection failed) the
    /// origin counts as proven; else (cancelled, expired) the next waiter becomes the pilot.
    mutating func left(_ id: UInt64, origin: String, curlEnded: Bool) {
        guard pilots[origin] == id else { return }
        pilots[origin] = nil
        if curlEnded {
            // Whether it multiplexes is not known: its transfers wait for a connection as they did before the gate.
            proved(origin: origin, multiplexed: true)
        } else if waiting[origin] != nil {
            roomy.insert(origin)
        }
    }

    /// The waiting transfers that may go now, each counted as not started (the one of a gated origin as its pilot);
    /// `isWaiting` tells which queued ids still want to go (the others are dropped).
    mutating func admitted(_ isWaiting: (UInt64) -> Bool) -> [UInt64] {
        var ids: [UInt64] = []
        for origin in roomy {
            guard var queue = waiting.removeValue(forKey: origin) else { continue }
            var count = unstarted[origin, default: 0]
            let gated = isGated(origin)
            // A gated origin lets in its pilot alone.
            let most = gated ? (pilots[origin] == nil ? min(limit, count + 1) : count) : limit
            while count < most, let id = queue.popFirst() {
                guard isWaiting(id) else { continue }
                ids.append(id)
                count += 1
                if gated { pilots[origin] = id }
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

    /// Proven origins, each with whether its transfers wait to multiplex, at most `capacity`, the one inserted
    /// longest ago forgotten to make room: a ring of the members in insertion order beside the map (each name's
    /// storage shared by both).
    private struct ProvenOrigins {
        let capacity: Int
        private var members: [String: Bool] = [:]
        private var order: [String] = []
        /// Where the ring's oldest member is, once it is full.
        private var oldest = 0

        init(capacity: Int) { self.capacity = capacity }

        func contains(_ origin: String) -> Bool { members[origin] != nil }

        /// Whether the transfers of `origin` wait to multiplex; nil when it is not a member.
        func multiplexes(_ origin: String) -> Bool? { members[origin] }

        /// Adds `origin` (not a member); returns the member forgotten to make room, if one was.
        mutating func insert(_ origin: String, multiplexes: Bool) -> String? {
            members[origin] = multiplexes
            guard order.count == capacity else {
                order.append(origin)
                return nil
            }
            let forgotten = order[oldest]
            members[forgotten] = nil
            order[oldest] = origin
            oldest = (oldest + 1) % capacity
            return forgotten
        }
    }
}
