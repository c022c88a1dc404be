/// Settles the race between starting a transfer and cancelling the task that asked for it.
///
/// Swift runs a task's cancellation handler at once, on the cancelling thread, possibly before the operation
/// has handed its transfer to the loop. This state machine decides, whatever the order, that a transfer
/// cancelled before registration is never started, and that one cancelled after it is cancelled exactly once.
struct RegistrationState: Sendable, Equatable {
    enum State: Sendable, Equatable {
        case idle
        case registered
        case cancelledBeforeRegistration
        case cancelled
    }

    /// What `register()` tells the caller to do.
    enum RegisterAction: Sendable, Equatable {
        /// Hand the transfer to the loop.
        case start
        /// Do not start it: finish at once as cancelled.
        case finishCancelled
    }

    /// What `cancel()` tells the caller to do.
    enum CancelAction: Sendable, Equatable {
        /// Tell the loop to cancel the registered transfer.
        case cancelTransfer
        /// Nothing: not registered yet (registration will see the cancellation) or already cancelled.
        case none
    }

    private(set) var state: State = .idle

    mutating func register() -> RegisterAction {
        switch state {
        case .idle:
            state = .registered
            return .start
        case .cancelledBeforeRegistration, .registered, .cancelled:
            // A second register is a programmer error in the caller; refusing to start is the safe answer.
            return .finishCancelled
        }
    }

    mutating func cancel() -> CancelAction {
        switch state {
        case .idle:
            state = .cancelledBeforeRegistration
            return .none
        case .registered:
            state = .cancelled
            return .cancelTransfer
        case .cancelledBeforeRegistration, .cancelled:
            return .none
        }
    }
}
