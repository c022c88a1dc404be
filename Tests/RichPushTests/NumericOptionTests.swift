import Foundation
import Testing

@testable import RichPush

// Serialized: some hundred CLI processes at once would starve the suite's deadline tests on two cores.
@Suite("CLI: numeric options are range-checked", .serialized)
struct NumericOptionTests {
    /// Values no numeric option takes: not numbers, not finite, negative, beyond any range, beyond Int64.
    static let hostile = ["nan", "inf", "-inf", "-1", "1e16", "1e300", "99999999999999999999", "0x1p70", "0x10", "1e1"]

    /// Each option, where it is given, its accepted range as the message states it, and values just outside.
    static let options: [(command: String, option: String, range: String, outside: [String])] = [
        ("enrich", "--deadline", "from 0.001 to 86400", ["0", "0.0001", "86400.5"]),
        ("stream", "--deadline", "from 0.001 to 86400", ["86401"]),
        ("enrich", "--cache-ttl", "from 0 to 31536000", ["31536001", "-0.5"]),
        ("stream", "--cache-max-mb", "from 1 to 1000000", ["0", "1000001", "1.5"]),
        ("enrich", "--max-source-bytes", "from 10000000 to 2147483647", ["9999999", "2147483648"]),
        ("enrich", "--concurrency", "from 1 to 10000", ["0", "10001", "2.5"]),
        ("stream", "--concurrency", "from 1 to 10000", ["0"]),
        ("gc", "--older-than", "from 0 to 3153600000", ["3153600001", "-0.001"]),
    ]

    static var cases: [(String, String, String, String)] {
        options.flatMap { entry in
            (hostile + entry.outside).map { (entry.command, entry.option, entry.range, $0) }
        }
    }

    @Test("a value out of range is a usage error (exit 64) naming the option and its range", arguments: cases)
    func outOfRange(command: String, option: String, range: String, value: String) async throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        // No standard input: the CLI exits before it would read it.
        let run = try await CLI.run([command, option, value, "--attachments-dir", root])
        #expect(run.status == 64, "\(option) \(value): status \(run.status)")
        #expect(run.stderr.contains(option) && run.stderr.contains(range), "\(option) \(value): \(run.stderr)")
        #expect(run.stdout.isEmpty)
    }

    @Test(
        "ports out of 1-65535 are a usage error (exit 64) naming the option and the range",
        arguments: [
            ("--allow-port", "0"), ("--allow-port", "65536"), ("--allow-port", "-1"), ("--allow-port", "80-65536"),
            ("--allow-port", "99999999999999999999"), ("--allow-port", "1-99999999999999999999"),
            ("--allow-port", "nan"), ("--allow-port", "1e3"), ("--allow-port", "9000-80"),
            ("--resolve", "a.test:0:127.0.0.1"), ("--resolve", "a.test:65536:127.0.0.1"),
            ("--resolve", "a.test:99999999999999999999:127.0.0.1"), ("--resolve", "a.test:-1:127.0.0.1"),
        ])
    func ports(option: String, value: String) async throws {
        let run = try await CLI.run(["enrich", option, value])
        #expect(run.status == 64)
        #expect(run.stderr.contains(option) && run.stderr.contains("1-65535"), "\(option) \(value): \(run.stderr)")
    }

    @Test("the ends of every range are accepted")
    func ends() async throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let input = root + "/payload.json"
        try Data(#"{"aps":{}}"#.utf8).write(to: URL(fileURLWithPath: input))
        let highest = try await CLI.run(
            [
                "enrich", "--deadline", "86400", "--cache-ttl", "31536000", "--cache-max-mb", "1000000",
                "--concurrency",
                "10000", "--allow-port", "65535", "--resolve", "a.test:65535:127.0.0.1", "--attachments-dir", root,
            ],
            inputFile: input)
        #expect(highest.status == 0, "\(highest.stderr)")
        let lowest = try await CLI.run(
            [
                "enrich", "--deadline", "0.001", "--cache-ttl", "0", "--cache-max-mb", "1", "--concurrency", "1",
                "--allow-port", "1-1", "--resolve", "a.test:1:127.0.0.1", "--attachments-dir", root,
            ],
            inputFile: input)
        #expect(lowest.status == 0, "\(lowest.stderr)")
        for age in ["0", "3153600000"] {
            let gc = try await CLI.run(["gc", "--older-than", age, "--attachments-dir", root])
            #expect(gc.status == 0, "\(gc.stderr)")
        }
    }
}
