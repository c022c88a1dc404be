import RichPushCore

/// A JPEG's, PNG's or GIF's structure, walked without decoding a pixel, over the bytes the digest step reads
/// anyway (`FileDigest`): whether the file is whole to its end marker, and when it is not, whether a phone still
/// shows part of it. iOS attaches these three types as fetched, and their headers alone were judged, so a file
/// cut short was attached as `complete`; a decode (`Enricher.Configuration.Transform.verifyImages`) costs libvips and
/// about as much CPU again as the fetch, this costs nearly nothing (measured in the commit that added it).
///
/// What a phone does decides each verdict: a PNG with any fault shows nothing (libpng fails on a critical chunk's
/// CRC and when the data ends first, and WebKit's `PNGImageDecoder` fails the image on any libpng error); a JPEG
/// or GIF shows what decodes, when some picture data came (libjpeg fills a truncated scan in grey, iOS shows a
/// truncated JPEG cut off, WebKit's `GIFImageReader` shows the frames and rows it read), and nothing when none did.
///
/// Fed in pieces of any size (`feed`), in order; each type's walk is a small state machine that never holds the
/// bytes, so its cost is the same however the file is cut.
struct ImageStructure {
    /// What the walk found once every byte was fed.
    enum Verdict: Sendable, Hashable {
        /// Whole: its end marker came where its structure said (bytes after it are ignored, as decoders do).
        case whole
        /// Damaged after its picture data began: a phone shows the part that decodes. Attached, with a
        /// `damaged-image` problem carrying the detail.
        case showsPart(String)
        /// Damaged where a phone shows nothing of it: a PNG with any fault, a JPEG or GIF without picture data.
        /// Refused with `damaged-image`.
        case showsNothing(String)
    }

    private enum Walk {
        case jpeg(JPEGStructure)
        case png(PNGStructure)
        case gif(GIFStructure)
    }

    private var walk: Walk

    /// A walk of an image of `type`; nil for a type without one (only JPEG, PNG and GIF are attached as fetched).
    init?(_ type: MediaType) {
        switch type {
        case .jpeg: walk = .jpeg(JPEGStructure())
        case .png: walk = .png(PNGStructure())
        case .gif: walk = .gif(GIFStructure())
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
        }
    }

    /// The verdict, once every byte has been fed.
    var verdict: Verdict {
        switch walk {
        case .jpeg(let jpeg): return jpeg.verdict
        case .png(let png): return png.verdict
        case .gif(let gif): return gif.verdict
        }
    }

    /// The canvas and the frames the bytes fed declare (`StructureWalk.declared`): a GIF's logical screen times its
    /// images, a PNG's IHDR times an APNG's frames; nil for a JPEG. The transformation's pixel limit counts them
    /// where a decoder's header does not (`TransformStep.pixelRefusal(declared:)`).
    var declared: ImageHeader? {
        switch walk {
        case .jpeg(let jpeg): return jpeg.declared
        case .png(let png): return png.declared
        case .gif(let gif): return gif.declared
        }
    }

    /// What the first bytes of an image of `type` declare, for the pixel limit: its structure's canvas and frames as
    /// far as `head` goes (`declared`: a GIF's logical screen times the images begun in it, a PNG's IHDR times an
    /// APNG's frames, an acTL's count coming before the first IDAT), else a JPEG's start-of-frame size
    /// (`ImageDimensions`), one frame; nil when they say neither. What `explain` judges a reference by, from its probe,
    /// as `enrich` judges the whole file's `declared` (`Fetcher.pixelRefusal(declared:)`).
    static func declared(byHead head: [UInt8], type: MediaType) -> ImageHeader? {
        if var structure = ImageStructure(type) {
            head.withUnsafeBytes { structure.feed($0) }
            if let declared = structure.declared { return declared }
        }
        return ImageDimensions.parse(head, type: type).map {
            ImageHeader(width: $0.width, height: $0.height, pages: 1, hasAlpha: false, decoder: nil)
        }
    }

    /// The verdict on `bytes`, a whole file of `type` (nil for a type without a walk).
    static func verdict(of bytes: [UInt8], type: MediaType) -> Verdict? {
        guard var structure = ImageStructure(type) else { return nil }
        bytes.withUnsafeBytes { structure.feed($0) }
        return structure.verdict
    }
}
