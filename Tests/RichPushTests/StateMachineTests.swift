import Testing

@testable import RichPush

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
