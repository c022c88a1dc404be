#if canImport(Glibc)
    import Glibc
#endif

/// Which file a name led to, as `fstat` or `lstat` found it: its device and inode (a file renamed over it is
/// another), its modification time (a file rewritten in place has a new one) and its size.
///
/// Not its change time: the media cache links every stored file it keeps (`linkat`), and a later payload with the
/// same media links it again, which changes the inode's change time under every one of its names, so a file still
/// whole would look changed. 32 bytes.
package struct FileIdentity: Sendable, Hashable {
    /// The device the file is on (`st_dev`).
    package let device: UInt64
    /// Its inode on that device (`st_ino`).
    package let inode: UInt64
    /// Its modification time (`st_mtim`), in nanoseconds since the epoch.
    package let modified: Int64
    /// Its size in bytes (`st_size`).
    package let bytes: Int

    /// The identity `info` (from `fstat`, `lstat` or `fstatat`) says.
    package init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        modified = Int64(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_mtim.tv_nsec)
        bytes = Int(info.st_size)
    }

    /// The identity of the open file `descriptor` (`fstat`), or nil when it cannot be read.
    package init?(descriptor: Int32) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        self.init(info)
    }
}
