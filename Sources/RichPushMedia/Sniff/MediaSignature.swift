/// The supported types and the images to convert (WebP, HEIC, AVIF) a body's first bytes name by their opening bytes
/// alone, as libmagic's MIME type: the sniffer's first question, before libmagic's database (`Sniffer`).
///
/// Why: libmagic tries its database's rules in order of strength, one after another, and a head's answer costs
/// every rule ranked above its type's: about 200 before a JPEG's (9-15 us a 4 KB head on the bench's machine), 20-31
/// us for a GIF, 66-153 us for an MP4, ~100 us for a WAV or AVI, 100-164 us for a WebP and 117 more for the
/// description its verdict quotes (68 and 71-76 for a HEIC or an AVIF), on the fetch loop's thread for most of
/// them; these comparisons cost nanoseconds. Plain comparisons, not rules handed to libmagic, so that nothing can
/// fail to load and the verdicts are the same on every machine.
///
/// What they say against the database (`SniffSignatureTests`): never another supported or convertible type (every
/// database rule naming one tests bytes at the start that these contradict), and the same type for random heads;
/// a head that also carries another format's marks further on, which the database ranks above these types (ISO
/// media, RIFF and IFF rank 70: a DOS boot sector's `55 AA` at byte 510, a Genesis ROM's `SEGA` at 256; a PageMaker
/// file's size field in an AIFF of 65,441 bytes), was refused as that format or as data, and is the type its opening
/// bytes say: what a phone's decoder reads it as, and its structure is walked as any (`MediaStructure`).
enum MediaSignature {
    /// The MIME type libmagic gives the type `head` opens with (`image/jpeg`...), or nil when it opens with none of
    /// them or is too short to tell (libmagic's database decides then).
    static func mimeType(_ head: UnsafeRawBufferPointer) -> String? {
        func has(_ bytes: StaticString, at offset: Int = 0) -> Bool { Self.has(head, bytes, at: offset) }
        // A JPEG's marker and a fourth byte (the database calls three bytes data).
        if head.count >= 4, head[0] == 0xFF, head[1] == 0xD8, head[2] == 0xFF { return "image/jpeg" }
        // A PNG's signature and its IHDR chunk's length and name (the signature alone is data to the database).
        if head.first == 0x89, has("PNG\r\n\u{1A}\n\0\0\0\rIHDR", at: 1) { return "image/png" }
        if has("GIF87a") || has("GIF89a") { return "image/gif" }
        guard head.count >= 12 else { return nil }
        if has("RIFF") {
            if has("WAVE", at: 8) { return "audio/x-wav" }
            if has("AVI ", at: 8) { return "video/x-msvideo" }
            if has("WEBP", at: 8) { return "image/webp" }
            return nil
        }
        if has("FORM"), has("AIFF", at: 8) { return "audio/x-aiff" }
        // An `ftyp` box under 256 bytes, as every one is (a random size field reads as other formats), by its
        // major brand: the database reads no other.
        guard head[0] == 0, head[1] == 0, head[2] == 0, has("ftyp", at: 4) else { return nil }
        if has("isom", at: 8) || has("mp41", at: 8) || has("mp42", at: 8) { return "video/mp4" }
        if has("M4A ", at: 8) { return "audio/x-m4a" }
        if has("heic", at: 8) || has("heix", at: 8) { return "image/heic" }
        if has("mif1", at: 8) { return "image/heif" }
        if has("avif", at: 8) || has("avis", at: 8) { return "image/avif" }
        return nil
    }

    /// The first part of libmagic's description (up to its first comma: all a verdict's text keeps) of a head whose
    /// opening bytes named `mimeType` (`mimeType(_:)`), for an image to convert, else nil: WebP's RIFF container,
    /// HEIF's and AVIF's ISO media. Asked for such a head's verdict, libmagic's description cost a second walk of
    /// its database.
    static func descriptionLead(of mimeType: String) -> String? {
        switch mimeType {
        case "image/webp": return "RIFF (little-endian) data"
        case "image/heic", "image/heif", "image/avif": return "ISO Media"
        default: return nil
        }
    }

    /// Whether `head` may be judged on the fetch loop's thread as it arrives (`SniffService`): the opening bytes
    /// name it, or they are a JPEG's, PNG's, GIF's or ISO media's, after which libmagic's quick questions are quick
    /// (measured there). Read in place: this runs for every body.
    static func judgedAtOnce(_ head: UnsafeRawBufferPointer) -> Bool {
        func has(_ bytes: StaticString, at offset: Int = 0) -> Bool { Self.has(head, bytes, at: offset) }
        let jpeg = head.count >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF
        let png = head.first == 0x89 && has("PNG\r\n\u{1A}\n", at: 1)
        // The types named take in these but for WAV, AVI, AIFF and WebP: asked last.
        return jpeg || png || has("GIF87a") || has("GIF89a") || has("ftyp", at: 4) || mimeType(head) != nil
    }

    /// Whether `head` holds `bytes` at `offset`.
    private static func has(_ head: UnsafeRawBufferPointer, _ bytes: StaticString, at offset: Int) -> Bool {
        let count = bytes.utf8CodeUnitCount
        guard head.count >= offset + count else { return false }
        return (0..<count).allSatisfy { head[offset + $0] == bytes.utf8Start[$0] }
    }
}
