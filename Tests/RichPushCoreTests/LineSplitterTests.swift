import RichPushTestSupport
import Testing

@testable import RichPushCore

/// Splitting input into bounded lines as it arrives, in pieces of any size.
@Suite struct LineSplitterTests {
    /// The lines `splitter` gives for `input` appended in `pieces` (their sizes), as text or "too long: N".
    static func lines(_ input: [UInt8], pieces: [Int], limit: Int) -> [String] {
        var splitter = LineSplitter(limit: limit)
        var lines: [String] = []
        func drain(atEnd: Bool) {
            while let line = splitter.next(atEnd: atEnd) {
                switch line {
                case .text(let bytes): lines.append(String(decoding: bytes, as: UTF8.self))
                case .tooLong(let count): lines.append("too long: \(count)")
                }
            }
        }
        var offset = 0
        for size in pieces where offset < input.count {
            let end = min(input.count, offset + size)
            splitter.append(input[offset..<end])
            offset = end
            drain(atEnd: false)
        }
        drain(atEnd: true)
        return lines
    }

    @Test(
        """
        the same lines whatever pieces the input comes in: long lines in small pieces, lines over the limit, a \
        final line without a newline, empty lines
        """)
    func pieces() {
        let long = String(repeating: "x", count: 5_000)
        let input = Array("a\n\nbc\n\(long)\n\(long)yy\nshort\n\(long.prefix(4_999))\nend".utf8)
        let expected = ["a", "", "bc", long, "too long: 5002", "short", String(long.prefix(4_999)), "end"]
        #expect(Self.lines(input, pieces: [input.count], limit: 5_000) == expected)
        #expect(Self.lines(input, pieces: Array(repeating: 1, count: input.count), limit: 5_000) == expected)
        var random = SplitMix64(seed: 26)
        for _ in 0..<50 {
            let pieces = (0..<input.count).map { _ in Int.random(in: 1...700, using: &random) }
            #expect(Self.lines(input, pieces: pieces, limit: 5_000) == expected, "\(pieces.prefix(8))")
        }
    }

    @Test(
        """
        a CR before the newline is the line end's: neither counted against the limit nor handed on, in any pieces, \
        split between the CR and the newline too; a line over the limit is the same length however it came
        """)
    func carriageReturns() {
        let limit = String(repeating: "x", count: 5_000)
        let input = Array("\(limit)\r\n\(limit)yz\r\nshort\r\n\ra\rb\n\(limit)\r".utf8)
        let expected = [limit, "too long: 5002", "short", "\ra\rb", limit]
        #expect(Self.lines(input, pieces: [input.count], limit: 5_000) == expected)
        var random = SplitMix64(seed: 35)
        for _ in 0..<50 {
            let pieces = (0..<input.count).map { _ in Int.random(in: 1...700, using: &random) }
            #expect(Self.lines(input, pieces: pieces, limit: 5_000) == expected, "\(pieces.prefix(8))")
        }
        // Every split of the over-long line's end: between its CR and its newline among them.
        let long = Array("\(limit)yz\r\nend".utf8)
        for cut in 4_990..<5_006 {
            #expect(Self.lines(long, pieces: [cut, long.count], limit: 5_000) == ["too long: 5002", "end"], "\(cut)")
        }
    }

    @Test("hasLine says whether a whole line is buffered, as pieces of one long line arrive")
    func hasLine() {
        var splitter = LineSplitter(limit: 100_000)
        for _ in 0..<100 {
            splitter.append(Array(repeating: UInt8(ascii: "x"), count: 512))
            #expect(!splitter.hasLine)
            #expect(splitter.next(atEnd: false) == nil)
        }
        splitter.append(Array("y\nz".utf8))
        #expect(splitter.hasLine)
        guard case .text(let line)? = splitter.next(atEnd: false) else {
            Issue.record("no line")
            return
        }
        #expect(line.count == 51_201 && line.last == UInt8(ascii: "y"))
        #expect(!splitter.hasLine)
    }
}
