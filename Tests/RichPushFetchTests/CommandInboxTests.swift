import Testing

@testable import RichPushFetch

@Suite("The fetch loop's inbox: when a command wakes the loop")
struct CommandInboxTests {
    @Test("only the command that finds the inbox empty wakes the loop; the others ride on its wake-up")
    func wakesWhenEmpty() {
        var inbox = CommandInbox<Int>()
        let wakes = [inbox.post(1), inbox.post(2), inbox.post(3)]
        #expect(wakes == [true, false, false])
        let taken = inbox.takeAll()
        #expect(taken == [1, 2, 3])
    }

    @Test("after the loop has taken every command, the next one wakes it again")
    func wakesAfterTake() {
        var inbox = CommandInbox<Int>()
        let none = inbox.takeAll()
        #expect(none.isEmpty)
        let first = inbox.post(1)
        #expect(first)
        let one = inbox.takeAll()
        #expect(one == [1])
        let wakes = [inbox.post(2), inbox.post(3)]
        #expect(wakes == [true, false])
        let two = inbox.takeAll()
        #expect(two == [2, 3])
        #expect(inbox.commands.isEmpty)
    }
}
