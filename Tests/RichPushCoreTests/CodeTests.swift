import Foundation
import RichPushTestSupport
import Testing

@testable import RichPushCore

/// The one code vocabulary: the list is docs/output.md's table, codes encode as their text.
@Suite("Codes")
struct CodeTests {
    /// docs/output.md's code table: each row's code and where it is reported, in order.
    static func documentedTable() throws -> [(code: String, domains: [String])] {
        let output = try String(contentsOfFile: FixtureDirectory.root + "/../docs/output.md", encoding: .utf8)
        let start = try #require(output.range(of: "\n## Codes\n"), "docs/output.md has a Codes section")
        let section = output[start.upperBound...]
        let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
        return section[..<end].split(separator: "\n").compactMap { line in
            guard line.hasPrefix("| `") else { return nil }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            let code = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            return (code, cells[2].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        }
    }

    @Test("the known codes are docs/output.md's table exactly: the same codes, in its order, each where it says")
    func documented() throws {
        let table = try Self.documentedTable()
        try #require(table.count >= 30, "docs/output.md's code table: \(table)")
        #expect(table.map(\.code) == EnrichmentProblem.Code.known.map(\.rawValue))
        for (code, domains) in table {
            let known = EnrichmentProblem.Code(rawValue: code).domains.map(\.rawValue).sorted()
            #expect(known == domains.sorted(), "\(code): docs/output.md says \(domains), the code \(known)")
        }
        for domain in EnrichmentProblem.Code.Domain.allCases {
            #expect(!EnrichmentProblem.Code.known(in: domain).isEmpty, "no code is reported in \(domain)")
        }
    }

    @Test("each code is listed once, and a code means one thing: an input over its limit is not oversize media")
    func once() {
        let known = EnrichmentProblem.Code.known
        #expect(Set(known).count == known.count)
        #expect(EnrichmentProblem.Code.known(in: .invalid).contains(.payloadTooLarge))
        #expect(!EnrichmentProblem.Code.known(in: .invalid).contains(.tooLarge))
        #expect(EnrichmentProblem.Code.tooLarge.domains == [.problem])
        var limits = JSONParser.Limits()
        limits.maximumBytes = 2
        #expect(throws: PayloadError(.payloadTooLarge, "the input is 3 bytes; the limit is 2")) {
            try JSONParser(limits: limits).parse(Array("{ }".utf8))
        }
    }

    @Test("the codes a result can carry are every problem and invalid code, each once")
    func reported() {
        let reported = EnrichmentProblem.Code.reported
        #expect(
            Set(reported)
                == Set(EnrichmentProblem.Code.known(in: .problem) + EnrichmentProblem.Code.known(in: .invalid)))
        #expect(Set(reported).count == reported.count)
        #expect(!reported.contains(.outOfRange))
    }

    @Test("a code encodes as its text and decodes from any text, a code it does not know included")
    func codable() throws {
        let encoded = try JSONEncoder().encode([EnrichmentProblem.Code.tooLarge, .payloadTooLarge])
        #expect(String(decoding: encoded, as: UTF8.self) == #"["too-large","payload-too-large"]"#)
        let decoded = try JSONDecoder().decode(
            [EnrichmentProblem.Code].self, from: Data(#"["bad-url","from-a-newer-richpush"]"#.utf8))
        #expect(decoded == [.badURL, EnrichmentProblem.Code(rawValue: "from-a-newer-richpush")])
        #expect(decoded[1].domains.isEmpty)
        for code in EnrichmentProblem.Code.known {
            #expect(try JSONDecoder().decode(EnrichmentProblem.Code.self, from: JSONEncoder().encode(code)) == code)
        }
    }
}
