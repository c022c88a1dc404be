import Testing

@testable import RichPushFetch

@Suite("Sniff state: the type and curl's end, in either order")
struct SniffStateTests {
    @Test("verdict first, then curl's end: the outcome follows curl")
    func verdictFirst() {
        var state = SniffState()
        #expect(!state.probeHasHead)
        state.handedOver()
        #expect(state.probeHasHead)
        #expect(state.verdictArrives() == .apply)
        #expect(state.curlFinishes() == .complete)
    }

    @Test("curl's end first, then the verdict: the outcome follows the verdict")
    func curlFirst() {
        var state = SniffState()
        state.handedOver()
        #expect(state.curlFinishes() == .awaitVerdict)
        #expect(state.verdictArrives() == .applyAndComplete)
    }

    @Test("a body shorter than the window is sniffed when curl ends, and its verdict completes it")
    func shortBody() {
        var state = SniffState()
        #expect(state.curlFinishes() == .sniffWhatCame)
        #expect(state.probeHasHead)
        #expect(state.verdictArrives() == .applyAndComplete)
    }

    @Test("a verdict nobody asked for, or a second one, is ignored")
    func ignored() {
        var state = SniffState()
        #expect(state.verdictArrives() == .ignore)
        state.handedOver()
        #expect(state.verdictArrives() == .apply)
        #expect(state.verdictArrives() == .ignore)
        state.handedOver()
        #expect(state.phase == .decided)
    }
}
