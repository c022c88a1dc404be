extension EnrichmentResult {
    /// The mutated payload's bytes, to hand on (to APNs, a queue, the device): exactly the `content` member that
    /// `jsonBytes()` writes, lossless (keys in their order, duplicates, numbers and escapes as they came), as
    /// compact JSON. Nil when the input was not a payload (outcome `invalid`).
    public var contentBytes: [UInt8]? {
        content.map { JSONWriter.bytes($0.json) }
    }
}
