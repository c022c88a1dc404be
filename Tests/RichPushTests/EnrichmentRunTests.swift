import Testing

@testable import RichPush

@Suite("EnrichmentRun: what is recorded for each reference, and the close, without I/O")
struct EnrichmentRunTests {
    /// A OneSignal payload with three references (`att.id1`, `id2`, `id3`), in that order.
    static func run() throws -> EnrichmentRun {
        let json = """
            {"aps":{"alert":"a","mutable-content":1},"att":{"id1":"http://m.example/0.jpg",\
            "id2":"http://m.example/1.jpg","id3":"http://m.example/2.jpg"},"custom":{"i":"1"}}
            """
        let run = EnrichmentRun(payload: try PushPayload(parsing: Array(json.utf8)), configuration: .init())
        try #require(run.references.map(\.url) == (0..<3).map { "http://m.example/\($0).jpg" })
        return run
    }

    static func media(_ name: String) -> FetchedMedia {
        FetchedMedia(path: "/r/\(name)/\(name).jpg", directory: "/r/\(name)", type: .jpeg, bytes: 1, sha256: name)
    }

    @Test("references settled out of order: each outcome and attempt goes with its own reference")
    func outOfOrder() throws {
        let run = try Self.run()
        run.attempting(2, 1)
        #expect(run.record(2, .success(Self.media("two"))) == nil)
        run.attempting(1, 1)
        run.attempting(1, 2)
        run.attempting(0, 1)
        #expect(run.record(0, .success(Self.media("zero"))) == nil)
        let result = run.close()
        #expect(result.attachments.map(\.media.path) == ["/r/zero/zero.jpg", "/r/two/two.jpg"])
        #expect(result.attachments.map(\.source) == ["http://m.example/0.jpg", "http://m.example/2.jpg"])
        #expect(result.problems.map(\.code) == [.expired])
        #expect(result.problems.first?.source == "http://m.example/1.jpg")
        #expect(result.problems.first?.attempts == 2, "the attempt reference 1 was on")
        #expect(result.outcome == .expired)
    }

    @Test("the first record of a reference wins; a later one, or one after the close, is handed back")
    func firstWinsAndClosed() throws {
        let run = try Self.run()
        #expect(run.record(1, .failure(FetchFailure(.httpStatus, "404"))) == nil)
        #expect(run.record(1, .success(Self.media("late"))) == .success(Self.media("late")))
        #expect(run.record(0, .success(Self.media("zero"))) == nil)
        let result = run.close()
        #expect(run.record(2, .success(Self.media("two"))) == .success(Self.media("two")), "closed: not recorded")
        #expect(result.attachments.map(\.media.path) == ["/r/zero/zero.jpg"])
        #expect(result.problems.map(\.code) == [.httpStatus, .expired])
        #expect(result.problems.map(\.attempts) == [1, nil], "no attempt noted: 1 for a settled one, none else")
    }

    @Test("refused: every reference cancelled, nothing attached")
    func refused() throws {
        let result = try Self.run().refused()
        #expect(result.outcome == .cancelled)
        #expect(result.attachments.isEmpty)
        #expect(result.problems.map(\.code) == [.cancelled, .cancelled, .cancelled])
    }
}
