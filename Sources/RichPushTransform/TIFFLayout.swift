/// The TIFF layouts libvips 8.14 does not read, named from the file's first directory, so that a failure says what
/// is wrong with the file rather than libvips's "read error" (old-style JPEG, seen in a test) or its terse "tiled
/// separate planes not supported".
enum TIFFLayout {
    /// What in the first directory of the TIFF at `path` libvips 8.14 cannot read, or nil.
    static func unreadable(_ path: String) -> String? {
        let header = ImageFile.bytes(path, count: 8)
        guard header.count == 8 else { return nil }
        let little: Bool
        switch (header[0], header[1]) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return nil
        }
        func number(_ bytes: ArraySlice<UInt8>) -> Int {
            (little ? bytes.reversed() : Array(bytes)).reduce(0) { $0 << 8 | Int($1) }
        }
        // Classic TIFF only (42); BigTIFF (43) has no layouts libvips refuses that classic has not.
        guard number(header[2..<4]) == 42 else { return nil }
        let directory = number(header[4..<8])
        let count = number(ImageFile.bytes(path, at: directory, count: 2)[...])
        guard count > 0, count < 4096 else { return nil }
        let entries = ImageFile.bytes(path, at: directory + 2, count: count * 12)
        var fields: [Int: Int] = [:]
        for start in stride(from: 0, to: entries.count - 11, by: 12) {
            let tag = number(entries[start..<(start + 2)])
            let type = number(entries[(start + 2)..<(start + 4)])
            // A SHORT value sits in the first two bytes of the value field, a LONG in all four.
            fields[tag] =
                type == 3 ? number(entries[(start + 8)..<(start + 10)]) : number(entries[(start + 8)..<(start + 12)])
        }
        if fields[259] == 6 {
            return "old-style JPEG compression (TIFF compression 6, replaced by 7 in 1995)"
        }
        if fields[322] != nil, fields[284] == 2 {
            return "tiles with separate colour planes (PlanarConfiguration 2)"
        }
        return nil
    }
}
