/// Bounds on sizes and counts.
public struct LimitSettings: Sendable {
    /// The largest image (JPEG, GIF, PNG). Default 10,000,000 bytes: Apple's documented 10 MB, read as
    /// decimal megabytes so we refuse before the phone would.
    public var imageBytes: Int = 10_000_000
    /// The largest audio file (MP3, AIFF, WAV, MPEG-4 audio). Default 5,000,000 bytes: Apple's 5 MB.
    public var audioBytes: Int = 5_000_000
    /// The largest video (MPEG, MPEG-2, MPEG-4, AVI). Default 50,000,000 bytes: Apple's 50 MB.
    public var videoBytes: Int = 50_000_000
    /// How many first bytes libmagic judges. Default 4,096: every supported format announces itself in its
    /// first few dozen bytes; 4 KB also covers HTML and SVG sniffing, and arrives in curl's first chunk.
    public var sniffBytes: Int = 4096
    /// The largest body kept in memory until it is complete, then hashed there and written whole by the task that
    /// fetched it, off the fetch loop's thread; a larger one (declared, or grown past this) is written to its file as
    /// it arrives. Default 1 MiB (1,048,576 bytes): a campaign's images, and the largest file hashed without the
    /// digest thread (raised past it, a larger held body is hashed there, so that no pool thread hashes it; it is
    /// still written by the fetching task). 0 writes every body as it arrives. A fetcher sharing another's loop (a
    /// tenant's) follows the loop's, as for `heldBytes`.
    public var heldBodyBytes: Int = 1 << 20
    /// The most bytes of bodies kept in memory at once (`heldBodyBytes`), every transfer of the fetcher together; a
    /// body that would take them past this is written as it arrives; a held body's bytes count until it is written
    /// (or refused), not through its transformation. Default 16 MiB (16,777,216 bytes): 64 transfers of 256 KB. One
    /// total for every transfer on the fetch loop: a fetcher sharing another's loop (a tenant's) follows the loop's
    /// values, not its own. A body held in a buffer an earlier body left counts at that buffer's whole capacity (at
    /// most twice its own). A quarter of it more keeps the emptied buffers of bodies written, refused or moved to their
    /// files, for the next bodies to reuse (4 MiB by default; the oldest make room for the newest).
    public var heldBytes: Int = 16 << 20
    /// The most bytes of response headers, across the redirects of one transfer. Default 64 KiB: real
    /// responses send under 8 KB; past this a server is trying to exhaust memory (`bad-response`).
    public var maximumHeaderBytes: Int = 64 * 1024
    /// The most references fetched for one payload; the rest are reported as `too-many-references`. Default
    /// 8: iOS shows one attachment and keeps a few; more is abuse.
    public var maximumReferences: Int = 8
    /// Bounds on the payload text. They also bound the memory of a payload in flight: a parsed payload is its
    /// text (with at most an eighth spare) and a tape of at most 4 bytes per byte of text (`JSONDocument`), so
    /// at most 5.2 times its size, 5.2 MiB at the 1 MiB default, whatever its shape (guaranteed by the tape's
    /// construction); the realistic shapes of bench (e) take 1 to 3 times. Its result line, while written,
    /// adds about its size again.
    public var payload = JSONParser.Limits()

    /// The documented defaults.
    public init() {}

    /// The cap for a kind of media.
    public func cap(for kind: MediaType.Kind) -> Int {
        switch kind {
        case .image: return imageBytes
        case .audio: return audioBytes
        case .video: return videoBytes
        }
    }

    /// The largest cap of any kind: what a body may reach before its type is known.
    public var largestCap: Int { max(imageBytes, audioBytes, videoBytes) }
}
