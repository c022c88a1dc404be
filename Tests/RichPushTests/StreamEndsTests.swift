import Foundation
import RichPushTestSupport
import Testing

/// `stream` when its standard output takes nothing, has gone, or its standard input fails: it ends, and says so.
@Suite struct StreamEndsTests {
    /// The bytes waiting in the pipe whose reading end is `handle` (FIONREAD).
    static func buffered(_ handle: FileHandle) -> Int {
        var count: Int32 = 0
        return ioctl(handle.fileDescriptor, UInt(FIONREAD), &count) == 0 ? Int(count) : -1
    }

    @Test(
        """
        SIGTERM while standard output takes nothing (a pipe nobody reads): the command exits 74 a second after the \
        drain's timeout, where its blocked write held it until the reader went
        """)
    func blockedOutput() async throws {
        let (process, input, output) = try CLI.start(["stream", "--drain-timeout", "1", "--concurrency", "4"])
        defer {
            try? input.close()
            try? output.close()
        }
        // Results of about 200 bytes: 4,000 of them are more than a pipe holds (64 KiB on Linux).
        input.write(Data(String(repeating: "{}\n", count: 4_000).utf8))
        // The pipe full: the command's write of results is blocked.
        try await waitUntil("the output pipe to fill", within: .seconds(30), every: .milliseconds(20)) {
            Self.buffered(output) >= 60_000
        }
        let signalled = ContinuousClock.now
        process.terminate()
        #expect(try await process.exitStatus("stream", within: .seconds(30)) == 74)
        // 1 s of drain and 1 s of a write blocked after it: the bound leaves a loaded machine room.
        #expect(ContinuousClock.now - signalled < .seconds(20))
    }

    @Test(
        """
        standard output gone (| head -1) while standard input stays open and idle: the command stops reading and \
        exits at the failed write, where it waited for the next line
        """)
    func outputGoneInputIdle() async throws {
        let (process, input, output) = try CLI.start(["stream"])
        defer { try? input.close() }
        input.write(Data("{}\n".utf8))
        let first = try await CLI.readLine(output, within: .seconds(30))
        #expect(first.contains(#""outcome":"unchanged""#), "\(first)")
        try output.close()
        // This line's result meets the closed pipe; nothing more comes on standard input, which stays open.
        input.write(Data("{}\n".utf8))
        #expect(try await process.exitStatus("stream", within: .seconds(30)) == 0)
    }

    @Test(
        """
        a standard output set non-blocking (a pipe shared with a process that did) that fills is waited on, every \
        result written, where the first EAGAIN lost the rest (exit 74)
        """)
    func nonBlockingOutput() async throws {
        let process = ChildProcess(CLI.binary, ["stream"])
        let input = Pipe()
        let output = Pipe()
        let writer = output.fileHandleForWriting.fileDescriptor
        #expect(fcntl(writer, F_SETFL, fcntl(writer, F_GETFL) | O_NONBLOCK) == 0)
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let reader = output.fileHandleForReading
        defer { try? reader.close() }
        input.fileHandleForWriting.write(Data(String(repeating: "{}\n", count: 4_000).utf8))
        try input.fileHandleForWriting.close()
        // The pipe full: the command's next write meets EAGAIN.
        try await waitUntil("the output pipe to fill", within: .seconds(30), every: .milliseconds(20)) {
            Self.buffered(reader) >= 60_000
        }
        let results = try await offPool { reader.readDataToEndOfFile() }
        #expect(try await process.exitStatus("stream", within: .seconds(30)) == 0)
        #expect(results.split(separator: 0x0A).count == 4_000)
    }

    @Test(
        """
        standard output closed at the start (>&-): exit 74 saying it was closed, where the event loop's descriptor \
        took its number and the write failed with "Invalid argument"
        """)
    func closedOutput() async throws {
        let run = try await offPool {
            try CLI.runBlocking(
                ["-c", "exec \"$0\" stream >&-", CLI.binary], stdin: "{}\n", prefix: ["/bin/sh"], direct: true)
        }
        #expect(run.status == 74, "\(run.stderr)")
        #expect(
            run.stderr.contains("cannot write results to standard output: it was closed when the command started"),
            "\(run.stderr)")
    }

    @Test(
        """
        standard input that cannot be read (a directory) is exit 74 with the reason, not the end of an input \
        exited 0 in silence
        """)
    func unreadableInput() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try await offPool {
            try CLI.runBlocking(
                ["-c", "exec \"$0\" stream < \"$1\"", CLI.binary, directory], stdin: nil, prefix: ["/bin/sh"],
                direct: true)
        }
        #expect(run.status == 74, "\(run.stderr)")
        #expect(run.stdout.isEmpty)
        #expect(
            run.stderr.contains("cannot read standard input: Is a directory after line 0"), "\(run.stderr)")
    }
}
