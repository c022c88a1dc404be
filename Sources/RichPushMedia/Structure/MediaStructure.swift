import RichPushCore

/// A fetched file's structure, walked without decoding a sample, over the bytes the digest step reads anyway
/// (`FileDigest`): whether the file is whole, and when it is not, whether a phone still shows (or plays) part of it.
/// iOS attaches JPEG, PNG, GIF, MP3, WAV, AIFF, M4A, MP4, AVI and MPEG as fetched, and libmagic types them by a few
/// bytes of their headers: a file cut short was attached as `complete`, and so was a valid header followed by an
/// HTML page (an MP3 frame sync, a RIFF/WAVE header or an `ftyp` box, then 3 KB of HTML, was attached as MP3, WAV,
/// MP4).
/// A decode (`Enricher.Configuration.Transform.verifyImages`, images only) costs libvips and about as much CPU again
/// as the fetch; this costs nearly nothing (measured in the commits that added each walk).
///
/// What a phone does decides each verdict. Images: a PNG with any fault shows nothing (libpng fails on a critical
/// chunk's CRC and when the data ends first, and WebKit's `PNGImageDecoder` fails the image on any libpng error); a
/// JPEG or GIF shows what decodes, when some picture data came (libjpeg fills a truncated scan in grey, iOS shows a
/// truncated JPEG cut off, WebKit's `GIFImageReader` shows the frames and rows it read), and nothing when none did.
/// Audio and video: a player plays what came once it knows the format and some of the media data came (an MP4's
/// whole `moov` box, a WAV's `fmt ` chunk, an AIFF's `COMM`, an AVI's `hdrl` list; an MP3's chained frames; an
/// MPEG program stream's whole audio or video packet), and nothing before. Images are refused and noted with
/// `damaged-image`, audio and video with `damaged-media`.
///
/// Fed in pieces of any size (`feed`), in order; each type's walk is a small state machine that never holds the
/// bytes, so its cost is the same however the file is cut.
struct MediaStructure {
    /// What the walk found once every byte was fed.
    enum Verdict: Sendable, Hashable {
        /// Whole: its structure ends where it says (bytes after an image's end marker, or after a RIFF or FORM's
        /// declared end, are ignored, as decoders do).
        case whole
        /// Damaged after its picture or media data began: a phone shows (plays) the part that decodes. Attached, with
        /// a `damaged-image` or `damaged-media` problem carrying the detail.
        case showsPart(String)
        /// Damaged where a phone shows (plays) nothing of it: a PNG with any fault, a JPEG or GIF without picture
        /// data, audio or video whose format or media data never came. Refused with `damaged-image` or
        /// `damaged-media`.
        case showsNothing(String)
        /// Whole, but a decoder's work on it has no bound worth paying (a JPEG of more scans than
        /// `JPEGStructure.maximumScans`): refused with `too-many-pixels`, transformation or not, since a phone would
        /// decode it too.
        case unbounded(String)
    }

    /// The walk, by type. An enum rather than `any StructureWalk`: each case's `feed` is specialized for its walk,
    /// whose `step` then runs as a direct call, once per byte in most states; through an existential it would be a
    /// witness-table call each time.
    private enum Walk {
        case jpeg(JPEGStructure)
        case png(PNGStructure)
        case gif(GIFStructure)
        case mp4(MP4Structure)
        case chunks(ChunkStructure)
        case mp3(MP3Structure)
        case programStream(ProgramStreamStructure)
    }

    private var walk: Walk

    /// A walk of a file of `type`; nil for a type without one (the types converted before they are attached, which
    /// their conversion decodes).
    init?(_ type: MediaType) {
        switch type {
        case .jpeg: walk = .jpeg(JPEGStructure())
        case .png: walk = .png(PNGStructure())
        case .gif: walk = .gif(GIFStructure())
        case .mp4, .m4a: walk = .mp4(MP4Structure())
        case .wav: walk = .chunks(ChunkStructure(.wave))
        case .avi: walk = .chunks(ChunkStructure(.avi))
        case .aiff: walk = .chunks(ChunkStructure(.aiff))
        case .mp3: walk = .mp3(MP3Structure())
        case .mpeg, .mpeg2: walk = .programStream(ProgramStreamStructure())
        default: return nil
        }
    }

    /// Takes the next bytes of the file.
    mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        switch walk {
        case .jpeg(var jpeg):
            jpeg.feed(bytes)
            walk = .jpeg(jpeg)
        case .png(var png):
            png.feed(bytes)
            walk = .png(png)
        case .gif(var gif):
            gif.feed(bytes)
            walk = .gif(gif)
        case .mp4(var mp4):
            mp4.feed(bytes)
            walk = .mp4(mp4)
        case .chunks(var chunks):
            chunks.feed(bytes)
            walk = .chunks(chunks)
        case .mp3(var mp3):
            mp3.feed(bytes)
            walk = .mp3(mp3)
        case .programStream(var stream):
            stream.feed(bytes)
            walk = .programStream(stream)
        }
    }

    /// The verdict, once every byte has been fed.
    var verdict: Verdict {
        switch walk {
        case .jpeg(let jpeg): return jpeg.verdict
        case .png(let png): return png.verdict
        case .gif(let gif): return gif.verdict
        case .mp4(let mp4): return mp4.verdict
        case .chunks(let chunks): return chunks.verdict
        case .mp3(let mp3): return mp3.verdict
        case .programStream(let stream): return stream.verdict
        }
    }

    /// The canvas and the frames the bytes fed declare (`StructureWalk.declared`): a GIF's logical screen times its
    /// images, a PNG's IHDR times an APNG's frames; nil for a JPEG, and for audio and video. The transformation's
    /// pixel limit counts them where a decoder's header does not (`TransformStep.pixelRefusal(declared:)`).
    var declared: ImageHeader? {
        switch walk {
        case .jpeg(let jpeg): return jpeg.declared
        case .png(let png): return png.declared
        case .gif(let gif): return gif.declared
        case .mp4, .chunks, .mp3, .programStream: return nil
        }
    }

    /// What the first bytes of an image of `type` declare, for the pixel limit: its structure's canvas and frames as
    /// far as `head` goes (`declared`: a GIF's logical screen times the images begun in it, a PNG's IHDR times an
    /// APNG's frames, an acTL's count coming before the first IDAT), else a JPEG's start-of-frame size
    /// (`ImageDimensions`), one frame; nil when they say neither, and for audio and video. What `explain` judges a
    /// reference by, from its probe, as `enrich` judges the whole file's `declared`
    /// (`Fetcher.pixelRefusal(declared:)`). No verdict is taken from `head`: it is the first bytes, not the file.
    static func declared(byHead head: [UInt8], type: MediaType) -> ImageHeader? {
        guard type.kind == .image else { return nil }
        if var structure = MediaStructure(type) {
            head.withUnsafeBytes { structure.feed($0) }
            if let declared = structure.declared { return declared }
        }
        return ImageDimensions.parse(head, type: type).map {
            ImageHeader(width: $0.width, height: $0.height, pages: 1, hasAlpha: false, decoder: nil)
        }
    }

    /// The verdict on `bytes`, a whole file of `type` (nil for a type without a walk).
    static func verdict(of bytes: [UInt8], type: MediaType) -> Verdict? {
        guard var structure = MediaStructure(type) else { return nil }
        bytes.withUnsafeBytes { structure.feed($0) }
        return structure.verdict
    }
}
