#if canImport(Glibc)
    import Glibc
#endif

/// Reads parts of an image file for the checks made beside libvips (a BMP's header, a TIFF's first directory).
enum ImageFile {
    /// Up to `count` bytes of the file at `path` from `offset`; fewer at its end, none when it cannot be read.
    static func bytes(_ path: String, at offset: Int = 0, count: Int) -> [UInt8] {
        guard offset >= 0, count > 0 else { return [] }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return [] }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let read = bytes.withUnsafeMutableBytes { buffer in
                pread(descriptor, buffer.baseAddress! + filled, count - filled, off_t(offset + filled))
            }
            if read < 0, errno == EINTR { continue }
            guard read > 0 else { break }
            filled += read
        }
        return Array(bytes.prefix(filled))
    }
}
