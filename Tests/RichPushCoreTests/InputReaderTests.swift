import Foundation
import RichPushTestSupport
import Testing

@testable import RichPushCore

/// Reading an input file within its bound.
@Suite struct InputReaderTests {
    @Test("a file is read whole; over the limit it is payload-too-large; a directory is unreadable")
    func files() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(FileManager.default.createFile(atPath: directory + "/p.json", contents: Data("{}".utf8)))
        #expect(try InputReader.read(directory + "/p.json", limit: 10).get() == Array("{}".utf8))
        #expect(throws: PayloadError.self) { try InputReader.read(directory + "/p.json", limit: 1).get() }
        #expect(throws: PayloadError.self) { try InputReader.read(directory, limit: 10).get() }
    }

    /// A reader blocked in `open` would hold its thread until a writer came: `result(of:...)` opens one when the bound
    /// runs out, so that a failure ends.
    @Test("a FIFO no process writes to reads as empty at once, where opening it waited for a writer forever")
    func fifoWithoutWriter() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fifo = directory + "/hang.fifo"
        try #require(mkfifo(fifo, 0o600) == 0)
        let read = try await result(of: "the read of a FIFO without a writer", within: .seconds(30), unblocking: fifo) {
            InputReader.read(fifo, limit: 1024)
        }
        #expect(try read.get() == [])
    }
}
