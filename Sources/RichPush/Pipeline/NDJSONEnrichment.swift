/// The NDJSON mode that `stream` and the service's NDJSON route share: each line a payload, each result a line,
/// in input order, each written as soon as every earlier one is out.
package enum NDJSONEnrichment {
    /// One line of input and its number (from 1).
    package struct Line: Sendable {
        package let number: Int
        package let line: LineSplitter.Line

        package init(number: Int, line: LineSplitter.Line) {
            self.number = number
            self.line = line
        }

        /// Whether the line is blank (spaces, tabs, a carriage return): blank lines are skipped, not payloads.
        package var isBlank: Bool {
            guard case .text(let bytes) = line else { return false }
            return bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
        }
    }

    /// The lines of a whole body (a request's), numbered from 1, blank ones skipped, each split off as it is taken:
    /// a batch of millions of short lines is not made into as many arrays before the first is processed.
    package struct BodyLines: Sendable {
        private var splitter: LineSplitter
        private var number = 0

        /// The lines of `body`; one longer than `limit` bytes is handed out as `tooLong`.
        package init(_ body: [UInt8], limit: Int) {
            splitter = LineSplitter(limit: limit, whole: body)
        }

        /// The next line that is not blank, or nil at the end.
        package mutating func next() -> Line? {
            while let line = splitter.next(atEnd: true) {
                number += 1
                let item = Line(number: number, line: line)
                if !item.isBlank { return item }
            }
            return nil
        }
    }

    /// Runs every line `next` hands out through `enricher`, `concurrency` at a time.
    /// - Parameters:
    ///   - timeout: each payload's deadline, counted from when its processing starts.
    ///   - input: the name a line's result carries as `input` (e.g. `-:<line>`).
    ///   - next: the next line, or nil at the end (or to stop reading).
    ///   - ready: a line already at hand, without waiting (see `OrderedPipeline.run`'s `ready`).
    ///   - observe: sees each result as it completes, on the task that made it.
    ///   - emit: takes each result line (JSON and a newline), in input order.
    ///   - flush: called after each run of emits that became due together; false stops reading.
    package static func run(
        enricher: Enricher,
        concurrency: Int,
        timeout: Duration,
        input: @escaping @Sendable (Int) -> String,
        next: @escaping @Sendable () async -> Line?,
        ready: () -> Line? = { nil },
        observe: @escaping @Sendable (EnrichmentResult) -> Void = { _ in },
        emit: ([UInt8]) -> Void,
        flush: () -> Bool
    ) async {
        let limit = enricher.configuration.limits.payload.maximumBytes
        await OrderedPipeline.run(
            concurrency: concurrency,
            next: next,
            ready: ready,
            process: { item in
                let name = input(item.number)
                let result: EnrichmentResult
                switch item.line {
                case .text(let bytes):
                    result = await enricher.enrich(json: bytes, source: name, deadline: .now + timeout)
                case .tooLong(let count):
                    result = .invalid(
                        PayloadError(.payloadTooLarge, "line \(item.number) is \(count) bytes; the limit is \(limit)"),
                        source: name)
                }
                observe(result)
                return result.line(input: name)
            },
            emit: { _, line in
                emit(line)
                return true
            },
            flush: flush)
    }
}
