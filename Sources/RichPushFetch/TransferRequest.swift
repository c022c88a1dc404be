import RichPushCore

/// What a transfer needs to know, fixed when it is asked for.
package struct TransferRequest: Sendable {
    package var url: String
    package var deadline: ContinuousClock.Instant
    /// Sent as If-None-Match / If-Modified-Since; a 304 then ends the transfer `notModified`.
    package var validators = Validators()
    /// Fetch only the headers and the first bytes, to tell what the media is; nothing is stored (`explain`).
    package var probe = false
    /// The first bytes a probe keeps and reports, when more than the sniffing window (`limits.sniffBytes`): `explain`
    /// reading a HEIF's `meta` box and its items' first data. It stops receiving once it has them.
    package var probeBytes = 0
    /// The settings this transfer follows instead of its loop's (a tenant's network policy, limits and caps, on a
    /// loop that several tenants share); nil for the loop's own. The loop's connection bounds hold either way.
    package var settings: FetchSettings? = nil

    package init(
        url: String, deadline: ContinuousClock.Instant, validators: Validators = Validators(), probe: Bool = false,
        probeBytes: Int = 0, settings: FetchSettings? = nil
    ) {
        self.url = url
        self.deadline = deadline
        self.validators = validators
        self.probe = probe
        self.probeBytes = probeBytes
        self.settings = settings
    }
}
