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

    @Test("whitespace after a payload of exactly the limit is not counted (render's newline); other bytes are")
    func trailingWhitespace() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let payload = #"{"a":"\#(String(repeating: "x", count: 100_000))"}"#
        let limit = payload.utf8.count
        for (suffix, read) in [("\n", true), ("\r\n \t\n", true), ("", true), ("x", false), ("\n1", false)] {
            let written = FileManager.default.createFile(
                atPath: directory + "/p.json", contents: Data((payload + suffix).utf8))
            #expect(written)
            let result = InputReader.read(directory + "/p.json", limit: limit)
            #expect((try? result.get()) == (read ? Array(payload.utf8) : nil), "\(suffix.debugDescription)")
        }
        #expect(throws: PayloadError.self) { try InputReader.read(directory + "/p.json", limit: limit - 1).get() }
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

/// Reading a file in chunks by its path.
@Suite struct ReadChunksTests {
    @Test(
        """
        a FIFO at the path is refused at once (EINVAL), never waited on: one raced onto a published name after its \
        lstat blocked the publisher's thread for ever; a regular file is read whole
        """)
    func fifoRefused() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fifo = directory + "/name.jpg"
        #expect(mkfifo(fifo, 0o600) == 0)
        let outcome = try await result(of: "readChunks on the FIFO to return", within: .seconds(10), unblocking: fifo) {
            FileSystem.readChunks(fifo) { _ in true }
        }
        #expect(outcome == EINVAL)
        let file = directory + "/file.jpg"
        try Data(repeating: 7, count: 300_000).write(to: URL(fileURLWithPath: file))
        var total = 0
        let failed = FileSystem.readChunks(file) { chunk in
            total += chunk.count
            return true
        }
        #expect(failed == nil)
        #expect(total == 300_000)
    }
}
