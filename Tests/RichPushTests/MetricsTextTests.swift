import Testing

@testable import RichPush

@Suite("/metrics: the exposition's label values")
struct MetricsTextTests {
    @Test(
        """
        a label value keeps Prometheus's three escapes, read scalar by scalar (a CRLF is one Character), and any \
        other control character becomes U+FFFD
        """)
    func escapes() {
        #expect(ServiceMetrics.escaped("Access\r\nDenied") == "Access\u{FFFD}\\nDenied")
        #expect(ServiceMetrics.escaped(#"a\b"c"#) == #"a\\b\"c"#)
        #expect(ServiceMetrics.escaped("x\ny") == "x\\ny")
        #expect(ServiceMetrics.escaped("\u{1B}[2J\u{7}\u{85}\u{7F}") == "\u{FFFD}[2J\u{FFFD}\u{FFFD}\u{FFFD}")
        #expect(ServiceMetrics.escaped("tenant-ü") == "tenant-ü")
    }
}
