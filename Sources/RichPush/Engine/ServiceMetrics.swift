/// The counters `serve` and `worker` expose, rendered in Prometheus's text format (version 0.0.4) for
/// `GET /metrics`: payloads by outcome, problems by code, durations, HTTP responses by status, and the engine's
/// statistics. Here, below both, so that the worker needs no part of the service.
package final class ServiceMetrics: Sendable {
    /// The duration histogram's upper bounds, in seconds: from a cached attachment (milliseconds) to the
    /// 25 s default deadline.
    package static let durationBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25]

    private struct Counts {
        var outcomes: [String: Int] = Dictionary(
            uniqueKeysWithValues: EnrichmentResult.Outcome.allCases.map { ($0.rawValue, 0) })
        /// Every code a result can carry, at 0 until reported: a dashboard's series exist from the start.
        var problems: [String: Int] = Dictionary(
            uniqueKeysWithValues: EnrichmentProblem.Code.reported.map { ($0.rawValue, 0) })
        var buckets = [Int](repeating: 0, count: ServiceMetrics.durationBuckets.count)
        var durationCount = 0
        var durationSum = 0.0
        var requests: [Int: Int] = [:]
    }

    private let counts = LockedValue(Counts())

    /// A tenant's counts, as `/metrics` shows them under `serve --tenants`: its payloads, problems and durations
    /// (the same families, with a `tenant` label), its requests in process and its 429s by code.
    package struct TenantCounts: Sendable {
        package var name: String
        package var metrics: ServiceMetrics
        package var inFlight: Int
        package var rejections: [String: Int]

        package init(name: String, metrics: ServiceMetrics, inFlight: Int, rejections: [String: Int]) {
            self.name = name
            self.metrics = metrics
            self.inFlight = inFlight
            self.rejections = rejections
        }
    }

    package init() {}

    /// Counts one payload's result.
    package func record(_ result: EnrichmentResult) {
        let seconds = result.elapsed.inSeconds
        counts.withLock { counts in
            counts.outcomes[result.outcome.rawValue, default: 0] += 1
            for problem in result.problems { counts.problems[problem.code.rawValue, default: 0] += 1 }
            if let bucket = Self.durationBuckets.firstIndex(where: { seconds <= $0 }) { counts.buckets[bucket] += 1 }
            counts.durationCount += 1
            counts.durationSum += seconds
        }
    }

    /// Counts one HTTP response by status.
    package func record(status: Int) {
        counts.withLock { $0.requests[status, default: 0] += 1 }
    }

    /// The exposition: the service's counters, the engine's statistics and the gauges given. With `tenants` (under
    /// `serve --tenants`, where every payload is a tenant's), the payloads, problems and durations are each tenant's,
    /// labelled `tenant`, and each tenant's requests in process and 429s follow.
    package func render(
        engine: EngineStatistics, inFlight: Int, draining: Bool, tenants: [TenantCounts]? = nil
    ) -> [UInt8] {
        let counts = counts.withLock { $0 }
        let labelled: [(labels: [(String, String)], counts: Counts)] =
            tenants.map { tenants in
                tenants.map { ([("tenant", $0.name)], $0.metrics.counts.withLock { $0 }) }
            } ?? [([], counts)]
        var text = ""
        func family(_ name: String, _ type: String, _ help: String) {
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        func sample(_ name: String, _ labels: [(String, String)] = [], _ value: some CustomStringConvertible) {
            let rendered = labels.map { "\($0.0)=\"\(Self.escaped($0.1))\"" }.joined(separator: ",")
            text += name + (labels.isEmpty ? "" : "{\(rendered)}") + " \(value)\n"
        }
        /// A histogram family: `counts` per bucket of `bounds` (not cumulative), then +Inf, sum and count.
        func histogramSamples(
            _ name: String, _ labels: [(String, String)], _ bounds: [Double], _ counts: [Int], total: Int,
            sum: Double
        ) {
            var cumulative = 0
            for (bound, count) in zip(bounds, counts) {
                cumulative += count
                sample(name + "_bucket", labels + [("le", Self.number(bound))], cumulative)
            }
            sample(name + "_bucket", labels + [("le", "+Inf")], total)
            sample(name + "_sum", labels, Self.number(sum))
            sample(name + "_count", labels, total)
        }
        func histogram(
            _ name: String, _ help: String, _ bounds: [Double], _ counts: [Int], total: Int, sum: Double
        ) {
            family(name, "histogram", help)
            histogramSamples(name, [], bounds, counts, total: total, sum: sum)
        }
        family("richpush_payloads_total", "counter", "Payloads processed, by outcome.")
        for (labels, counts) in labelled {
            for (outcome, count) in counts.outcomes.sorted(by: { $0.key < $1.key }) {
                sample("richpush_payloads_total", labels + [("outcome", outcome)], count)
            }
        }
        family("richpush_problems_total", "counter", "Problems reported in results, by code.")
        for (labels, counts) in labelled {
            for (code, count) in counts.problems.sorted(by: { $0.key < $1.key }) {
                sample("richpush_problems_total", labels + [("code", code)], count)
            }
        }
        family("richpush_payload_duration_seconds", "histogram", "Time from a payload's start to its result.")
        for (labels, counts) in labelled {
            histogramSamples(
                "richpush_payload_duration_seconds", labels, Self.durationBuckets, counts.buckets,
                total: counts.durationCount, sum: counts.durationSum)
        }
        family(
            "richpush_fetched_bytes_total", "counter", "Bytes of media fetched and stored (not counting cache links).")
        sample("richpush_fetched_bytes_total", [], engine.fetchedBytes)
        family("richpush_cache_lookups_total", "counter", "Media cache lookups, by result.")
        sample("richpush_cache_lookups_total", [("result", "hit")], engine.cacheHits)
        sample("richpush_cache_lookups_total", [("result", "miss")], engine.cacheMisses)
        sample("richpush_cache_lookups_total", [("result", "revalidated")], engine.cacheRevalidations)
        family("richpush_http_responses_total", "counter", "HTTP responses, by status.")
        for (status, count) in counts.requests.sorted(by: { $0.key < $1.key }) {
            sample("richpush_http_responses_total", [("status", String(status))], count)
        }
        family("richpush_in_flight", "gauge", "Payloads in process (an NDJSON request counts once).")
        sample("richpush_in_flight", [], inFlight)
        family("richpush_draining", "gauge", "1 while the service drains before exiting.")
        sample("richpush_draining", [], draining ? 1 : 0)
        if let tenants {
            family("richpush_tenant_in_flight", "gauge", "A tenant's requests in process (max_in_flight).")
            for tenant in tenants { sample("richpush_tenant_in_flight", [("tenant", tenant.name)], tenant.inFlight) }
            family(
                "richpush_tenant_rejections_total", "counter",
                "A tenant's requests refused with 429, by code (tenant-in-flight, rate-limited).")
            for tenant in tenants {
                for code in ["rate-limited", "tenant-in-flight"] {
                    sample(
                        "richpush_tenant_rejections_total", [("tenant", tenant.name), ("code", code)],
                        tenant.rejections[code] ?? 0)
                }
            }
        }
        if let publishing = engine.publishing {
            family(
                "richpush_publish_total", "counter", "Attachments published, by result (uploaded, or already there).")
            sample("richpush_publish_total", [("result", "uploaded")], publishing.uploads)
            sample("richpush_publish_total", [("result", "hit")], publishing.hits)
            family("richpush_publish_uploaded_bytes_total", "counter", "Bytes of the objects uploaded.")
            sample("richpush_publish_uploaded_bytes_total", [], publishing.uploadedBytes)
            family("richpush_publish_failures_total", "counter", "Attachments not published, by the store's code.")
            for (code, count) in publishing.failures.sorted(by: { $0.key < $1.key }) {
                sample("richpush_publish_failures_total", [("code", code)], count)
            }
            histogram(
                "richpush_publish_upload_duration_seconds", "Time an upload took, retries included.",
                PublishStatistics.durationBounds, publishing.durationCounts, total: publishing.uploads,
                sum: publishing.durationSum)
        }
        family("richpush_build_info", "gauge", "The running version.")
        sample("richpush_build_info", [("version", RichPushVersion.current)], 1)
        return Array(text.utf8)
    }

    /// A label value with Prometheus's escapes (backslash, quote, newline), read scalar by scalar: a `Character`
    /// holds "\r\n" whole, so a search for "\n" by characters missed the line break in a store's `<Code>` of
    /// `Access\r\nDenied`, and one such answer made every later scrape unreadable. Any other control character
    /// becomes U+FFFD (the format has no escape for it).
    static func escaped(_ value: String) -> String {
        var text = String.UnicodeScalarView()
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": text.append(contentsOf: "\\\\".unicodeScalars)
            case "\"": text.append(contentsOf: "\\\"".unicodeScalars)
            case "\n": text.append(contentsOf: "\\n".unicodeScalars)
            case _ where TerminalText.isControl(scalar): text.append("\u{FFFD}")
            default: text.append(scalar)
            }
        }
        return String(text)
    }

    /// A number as Prometheus reads it: `0.005`, `1`, `25`.
    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

extension String {
    /// Every occurrence of `target` replaced (FoundationEssentials-free).
    package func replacingAll(_ target: String, _ replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
