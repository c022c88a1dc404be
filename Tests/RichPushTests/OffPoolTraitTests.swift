import Testing

@Suite("Test support: the off-pool trait")
struct OffPoolTraitTests {
    @Test("a test under .offPool runs its body, and its child tasks, on its own thread", .offPool)
    func runsOnItsThread() async {
        #expect(TestThreadExecutor.isCurrentThread)
        let children = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<4 { group.addTask { TestThreadExecutor.isCurrentThread } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(children == [true, true, true, true])
    }

    @Test("without it, a test runs on the cooperative pool")
    func poolOtherwise() async {
        #expect(!TestThreadExecutor.isCurrentThread)
    }
}
