import Foundation
import RichPushTestSupport
import Testing

@Suite("Test support: ChildProcess")
struct ChildProcessTests {
    @Test("FileHandle.nullDevice gives the child /dev/null, not the test's own streams", .offPool)
    func nullDevice() async throws {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        // What the shell's own standard input and output are (read before any redirection), on its standard error.
        process.arguments = ["-c", "streams=$(readlink /proc/$$/fd/0 /proc/$$/fd/1); echo \"$streams\" >&2"]
        let errors = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        let written = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(String(decoding: written, as: UTF8.self) == "/dev/null\n/dev/null\n")
    }

}
