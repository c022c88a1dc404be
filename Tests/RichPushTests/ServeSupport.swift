import Foundation
import Testing

/// A `richpush serve` process on a free loopback port, its standard error collected (the access log).
final class ServeProcess: @unchecked Sendable {
    let process: ChildProcess
    let port: Int
    private let errors: FileHandle
    private let collected = Collected()

    /// What the reader thread has read: apart from the process, so that the thread does not keep it alive (a
    /// test that fails before `terminate` then still kills its server when it lets go of it).
    private final class Collected: @unchecked Sendable {
        let lock = NSLock()
        var bytes: [UInt8] = []
    }

    /// What the server wrote before its listening line (warnings).
    let startup: String

    /// Starts the server with `arguments` (besides `--listen 127.0.0.1:0`) and waits for its listening line.
    /// Without `readingStandardError`, nothing reads its standard error after that line (a stuck log reader).
    /// `environment` (`NAME=value`) is added to the test's own. With a `launcher` (a program and its arguments that
    /// end by running the command after them in the same process, as `prlimit`), the server is started through it.
    init(
        _ arguments: [String], environment: [String] = [], readingStandardError: Bool = true,
        launcher: [String] = []
    ) async throws {
        let variables = Dictionary(
            environment.map { ($0.prefix { $0 != "=" }.description, $0.drop { $0 != "=" }.dropFirst().description) },
            uniquingKeysWith: { $1 })
        let command = launcher + [CLI.binary, "serve", "--listen", "127.0.0.1:0"] + arguments
        process = ChildProcess(command[0], Array(command.dropFirst()), environment: variables)
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        errors = pipe.fileHandleForReading
        try process.run()
        // Warnings may come before the listening line: read what it writes until that line is in.
        let (process, errors) = (process, errors)
        let (port, startup, after) = try await offPool { () throws -> (Int, String, String) in
            var written: [UInt8] = []
            var found: (port: Int, line: Range<String.Index>, in: String)? = nil
            try process.waitUntilReady("serve to report its port", log: { String(decoding: written, as: UTF8.self) }) {
                written += Self.available(errors)
                let text = String(decoding: written, as: UTF8.self)
                let pattern = #"\{"listening":"127\.0\.0\.1:(\d+)"\}\n"#
                guard let line = text.range(of: pattern, options: .regularExpression),
                    let port = Int(text[line].dropLast(3).split(separator: ":").last!)
                else { return false }
                found = (port, line, text)
                return true
            }
            let (port, line, text) = found!
            return (port, String(text[..<line.lowerBound]), String(text[line.upperBound...]))
        }
        self.port = port
        self.startup = startup
        // What came after the listening line in the same read is the log's beginning.
        collected.bytes = Array(after.utf8)
        guard readingStandardError else { return }
        // Everything after the listening line is collected on a thread of its own.
        let (handle, collected) = (errors, collected)
        Thread {
            while true {
                let data = handle.availableData
                if data.isEmpty { return }
                collected.lock.lock()
                collected.bytes += data
                collected.lock.unlock()
            }
        }.start()
    }

    /// The access log (and any other line on standard error) so far.
    var stderr: String {
        collected.lock.lock()
        defer { collected.lock.unlock() }
        return String(decoding: collected.bytes, as: UTF8.self)
    }

    /// The access log's lines, parsed.
    var logLines: [[String: Any]] {
        stderr.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// What `handle` holds for reading now (up to 64 KiB), without waiting for more; empty at its end too.
    private static func available(_ handle: FileHandle) -> [UInt8] {
        var poller = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 0) > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = read(handle.fileDescriptor, &buffer, buffer.count)
        return count > 0 ? Array(buffer[..<count]) : []
    }

    /// Sends SIGTERM and waits for the exit (failing loudly after `limit`); the exit status.
    func terminate(within limit: Duration = .seconds(60)) async throws -> Int32 {
        process.terminate()
        return try await waitForExit(within: limit)
    }

    func waitForExit(within limit: Duration) async throws -> Int32 {
        try await process.exitStatus("serve", within: limit)
    }

    /// One request on a new connection, off the cooperative pool.
    func request(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
        within limit: Duration = .seconds(30)
    ) async throws -> HTTPReply {
        let port = port
        return try await offPool {
            let connection = try HTTPConnection(port: port)
            return try connection.exchange(method, target, headers: headers, body: body, within: limit)
        }
    }
}
