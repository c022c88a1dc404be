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

    /// `stream` started with pipes to its standard input and from its standard output, the end `end` of the pipe
    /// `pipe` (\.input or \.output) set non-blocking first, as a process sharing it would have.
    static func stream(
        nonBlocking end: KeyPath<Pipe, FileHandle>, of pipe: KeyPath<(input: Pipe, output: Pipe), Pipe>
    ) throws -> (ChildProcess, input: Pipe, output: Pipe) {
        let process = ChildProcess(CLI.binary, ["stream"])
        let pipes = (input: Pipe(), output: Pipe())
        let descriptor = pipes[keyPath: pipe][keyPath: end].fileDescriptor
        #expect(fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK) == 0)
        process.standardInput = pipes.input
        process.standardOutput = pipes.output
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, pipes.input, pipes.output)
    }

    /// Reads `handle` to its end (or for two minutes) in reads of at most `parts` bytes, `pause` microseconds apart.
    static func readSlowly(_ handle: FileHandle, parts: Int, pause: useconds_t) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: parts)
        let end = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < end {
            let count = Glibc.read(handle.fileDescriptor, &chunk, chunk.count)
            if count <= 0 { break }
            bytes += chunk[..<count]
            usleep(pause)
        }
        return bytes
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
        SIGTERM while a slow reader takes large results: it is waited for, however long one write of results lasts, \
        every result written whole and exit 0
        """)
    func slowReader() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Results of about 900 KB (each holds its payload's content): one write of one outlasts a second here. From a
        // file, which the command reads as it needs (a pipe the test wrote whole would wait on it).
        let payload = #"{"aps":{},"pad":""# + String(repeating: "x", count: 900_000) + #""}"#
        let file = directory + "/in.ndjson"
        try Data(String(repeating: payload + "\n", count: 8).utf8).write(to: URL(fileURLWithPath: file))
        let input = try #require(FileHandle(forReadingAtPath: file))
        defer { try? input.close() }
        let process = ChildProcess(CLI.binary, ["stream", "--drain-timeout", "1", "--concurrency", "8"])
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let reader = output.fileHandleForReading
        defer { try? reader.close() }
        try await waitUntil("the output pipe to fill", within: .seconds(30), every: .milliseconds(20)) {
            Self.buffered(reader) >= 60_000
        }
        process.terminate()
        // 16 KiB every 100 ms: about 160 KB/s, so a result takes the reader more than five seconds, in one write.
        let read = try await offPool { Self.readSlowly(reader, parts: 16_384, pause: 100_000) }
        #expect(try await process.exitStatus("stream", within: .seconds(30)) == 0)
        // However many lines were read before the signal, each result whole.
        let lines = read.split(separator: 0x0A, omittingEmptySubsequences: false)
        #expect(lines.count >= 2 && lines.last?.isEmpty == true, "\(lines.count) lines")
        #expect(lines.dropLast().allSatisfy { $0.count > 900_000 }, "\(lines.map(\.count))")
    }

    @Test(
        """
        SIGTERM while standard output and standard error are one pipe nobody reads: the command still exits 74 a \
        second after the drain's timeout, where its message, written first, held it
        """)
    func blockedOutputAndErrors() async throws {
        let process = ChildProcess(CLI.binary, ["stream", "--drain-timeout", "1", "--concurrency", "4"])
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let reader = output.fileHandleForReading
        defer {
            try? input.fileHandleForWriting.close()
            try? reader.close()
        }
        // One result of about 900 KB: its write fills the pipe to the last byte (small results leave part of a
        // page free, where the message would still fit).
        let payload = #"{"aps":{},"pad":""# + String(repeating: "x", count: 900_000) + #""}"#
        input.fileHandleForWriting.write(Data((payload + "\n").utf8))
        try await waitUntil("the output pipe to fill", within: .seconds(30), every: .milliseconds(20)) {
            Self.buffered(reader) >= 65_536
        }
        process.terminate()
        #expect(try await process.exitStatus("stream", within: .seconds(30)) == 74)
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
        let (process, input, output) = try Self.stream(nonBlocking: \.fileHandleForWriting, of: \.output)
        let reader = output.fileHandleForReading
        defer { try? reader.close() }
        input.fileHandleForWriting.write(Data(String(repeating: "{}\n", count: 4_000).utf8))
        try input.fileHandleForWriting.close()
        // Read at about 200 KB/s, slower than the command writes its 800 KB of results: its writes meet a full pipe.
        let results = try await offPool { Self.readSlowly(reader, parts: 4_096, pause: 20_000) }
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
        a standard input set non-blocking (a pipe shared with a process that did) is waited on between lines, where \
        its first EAGAIN was a read error (exit 74)
        """)
    func nonBlockingInput() async throws {
        let (process, input, output) = try Self.stream(nonBlocking: \.fileHandleForReading, of: \.input)
        let writer = input.fileHandleForWriting
        defer { try? output.fileHandleForReading.close() }
        writer.write(Data("{}\n".utf8))
        let first = try await CLI.readLine(output.fileHandleForReading, within: .seconds(30))
        #expect(first.contains(#""input":"-:1""#), "\(first)")
        // The command has read the first line and waits for more: its next read meets an empty pipe.
        try await Task.sleep(for: .milliseconds(300))
        let written = try await offPool {
            ChildProcess.writeWithoutPipeSignal(Array("{}\n".utf8), to: writer.fileDescriptor)
        }
        #expect(written, "the command ended before its second line")
        let second = try await CLI.readLine(output.fileHandleForReading, within: .seconds(30))
        #expect(second.contains(#""input":"-:2""#), "\(second)")
        try writer.close()
        #expect(try await process.exitStatus("stream", within: .seconds(30)) == 0)
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
