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
    /// `environment` (`NAME=value`) is added to the test's own, through env(1), which execs the server in place.
    init(_ arguments: [String], environment: [String] = [], readingStandardError: Bool = true) async throws {
        process = ChildProcess()
        let command = [CLI.binary, "serve", "--listen", "127.0.0.1:0"] + arguments
        process.executableURL = URL(fileURLWithPath: environment.isEmpty ? CLI.binary : "/usr/bin/env")
        process.arguments = environment.isEmpty ? Array(command.dropFirst()) : environment + command
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        errors = pipe.fileHandleForReading
        try process.run()
        // Warnings may come before the listening line: read until it is in, within one bound.
        let end = ContinuousClock.now + .seconds(30)
        var written = ""
        var found: Range<String.Index>? = nil
        while found == nil, ContinuousClock.now < end {
            let more = try await CLI.readLine(errors, within: end - .now)
            if more.isEmpty { break }
            written += more
            found = written.range(of: #"\{"listening":"127\.0\.0\.1:(\d+)"\}"#, options: .regularExpression)
        }
        guard let found, let port = Int(written[found].dropLast(2).split(separator: ":").last!) else {
            process.terminate()
            throw ServeFailure("serve did not report its port; it wrote: \(written)")
        }
        self.port = port
        startup = String(written[..<found.lowerBound])
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

    /// Sends SIGTERM and waits for the exit (failing loudly after `limit`); the exit status.
    func terminate(within limit: Duration = .seconds(60)) async throws -> Int32 {
        kill(process.processIdentifier, SIGTERM)
        return try await waitForExit(within: limit)
    }

    func waitForExit(within limit: Duration) async throws -> Int32 {
        try await process.exitStatus("serve", within: limit)
    }

    deinit { process.killIfRunning() }

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
