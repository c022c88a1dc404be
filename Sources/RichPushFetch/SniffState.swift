/// Where a transfer's type stands: its first bytes still being collected, handed to the sniffer and waiting
/// for the verdict, or decided; and whether curl has finished. The outcome needs both (the type, and curl's end),
/// which arrive in either order; a probe stops receiving once its first bytes are handed over. A verdict reached
/// at once arrives right after the hand-over. Pure: the transfer reports events and does what each returns.
struct SniffState {
    enum Phase: Equatable {
        /// The first bytes are being collected.
        case collecting
        /// The first bytes went to the sniffer; its verdict has not come back.
        case pending
        /// The verdict has been applied.
        case decided
    }

    /// What a verdict that comes back means.
    enum OnVerdict: Equatable {
        /// None was asked for, or one was applied already: ignore it.
        case ignore
        /// Apply it; the transfer goes on.
        case apply
        /// Apply it; curl has finished, so the outcome follows.
        case applyAndComplete
    }

    /// What the type still needs once curl has finished.
    enum AfterCurl: Equatable {
        /// The body ended shorter than the sniffing window: hand the sniffer what there is, and wait for its verdict
        /// (unless it comes at once).
        case sniffWhatCame
        /// Wait for the verdict asked for.
        case awaitVerdict
        /// The type is known: the outcome follows.
        case complete
    }

    private(set) var phase = Phase.collecting
    /// Whether curl has finished the last request.
    private(set) var curlDone = false

    /// The first bytes went to the sniffer.
    mutating func handedOver() {
        if phase == .collecting { phase = .pending }
    }

    /// Whether a probe has what it came for and stops receiving: its first bytes are with the sniffer.
    var probeHasHead: Bool { phase != .collecting }

    /// The sniffer's verdict came back.
    mutating func verdictArrives() -> OnVerdict {
        guard phase == .pending else { return .ignore }
        phase = .decided
        return curlDone ? .applyAndComplete : .apply
    }

    /// Curl finished the last request.
    mutating func curlFinishes() -> AfterCurl {
        curlDone = true
        switch phase {
        case .collecting:
            phase = .pending
            return .sniffWhatCame
        case .pending:
            return .awaitVerdict
        case .decided:
            return .complete
        }
    }
}
