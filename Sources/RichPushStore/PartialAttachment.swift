import RichPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// An attachment being written: its directory, its open partial file. Owned by one transfer.
package final class PartialAttachment {
    /// The names of an attachment's directory and files, relative to the root.
    struct Names {
        /// The directory's UUID.
        let id: String
        /// The file's name without its extension.
        let file: String
        /// Whether the directory is a spare, still hidden as `.spare-<id>`.
        var spare: Bool

        /// The directory's name in the root: `<id>`, or `.spare-<id>` while a spare.
        var folder: String { spare ? AttachmentRoot.sparePrefix + id : id }

        var partial: String { folder + "/." + file + ".partial" }
        func complete(_ fileExtension: String) -> String { folder + "/" + file + "." + fileExtension }
    }

    /// The attachment's directory, `<root>/<uuid>` (`<root>/.spare-<uuid>` while a spare).
    package var directory: String { root.directory.path + "/" + names.folder }
    /// Kept so that the root's descriptor stays open as long as this needs it.
    private let root: AttachmentRoot
    private var names: Names
    /// The open partial file; -1 while a spare (closed) and once committed or discarded.
    private var descriptor: Int32
    /// Whether the files are still ours to remove (until committed or discarded).
    private var live = true

    init(root: AttachmentRoot, names: Names, descriptor: Int32) {
        self.root = root
        self.names = names
        self.descriptor = descriptor
    }

    /// Closes a spare's empty file until `reveal()` opens it again.
    func closeSpare() {
        close(descriptor)
        descriptor = -1
    }

    /// Renames a spare's hidden directory `.spare-<uuid>` to `<uuid>` (`renameat`), so that it is an attachment
    /// directory like one `begin()` makes. (Glibc's `renameat2` and `RENAME_NOREPLACE` are not visible to Swift
    /// without `_GNU_SOURCE`; nothing can be at a fresh random UUID in a root only this user writes to.) Nothing
    /// to do for one that is not a spare.
    /// - Throws: `StoreError` with the system's reason; the spare is then removed.
    func reveal() throws(StoreError) {
        guard names.spare else { return }
        let at = root.directory.descriptor
        guard renameat(at, names.folder, at, names.id) == 0 else {
            let error = StoreError("rename \(root.directory.path)/\(names.folder)", errno)
            discard()
            throw error
        }
        names.spare = false
        // The file we made `O_EXCL`; opened without `O_CREAT`, never through a link.
        descriptor = openat(at, names.partial, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            let error = StoreError("open \(root.directory.path)/\(names.partial)", errno)
            discard()
            throw error
        }
    }

    deinit { discard() }

    /// The open partial file, for a writer that takes a descriptor (the transformation's converter); -1 once
    /// committed or discarded.
    package var fileDescriptor: Int32 { descriptor }

    /// Appends bytes; throws on a short or failed write (ENOSPC, EIO).
    package func write(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw StoreError("write \(root.directory.path)/\(names.partial)", errno)
            }
            offset += written
        }
    }

    /// Appends `bytes` (a body held whole: `write(_:)` of its buffer).
    package func write(_ bytes: [UInt8]) throws(StoreError) {
        try bytes.withUnsafeBytes { buffer in Result { () throws(StoreError) in try write(buffer) } }.get()
    }

    /// The committed file's identity, from `fstat` on it just before its close (nil before `commit`, or when
    /// `fstat` failed): its rename and the media cache's links leave it as it is.
    package private(set) var identity: FileIdentity? = nil

    /// Closes the file and renames it to `<uuid>.<ext>`; returns the final path. Sets `identity`.
    package func commit(fileExtension: String) throws(StoreError) -> String {
        let complete = names.complete(fileExtension)
        let fd = descriptor
        descriptor = -1
        live = false
        // Read on the open file (no look-up by path): the service's index of attachments takes it instead of an
        // `lstat` of every attachment it is handed.
        identity = FileIdentity(descriptor: fd)
        // close reports deferred write errors (NFS, quota); a failed close or rename leaves nothing behind.
        let at = root.directory.descriptor
        if close(fd) != 0 || renameat(at, names.partial, at, complete) != 0 {
            let error = StoreError("commit \(root.directory.path)/\(names.partial)", errno)
            remove()
            throw error
        }
        do {
            try root.checkInPlace()
        } catch {
            unlinkat(at, complete, 0)
            remove()
            throw error
        }
        return root.directory.path + "/" + complete
    }

    /// Removes the partial file's name and the directory's from any thread, leaving the open file to its writer (a
    /// converter that did not stop, answered without): its writes go to a file no name reaches, and a commit after
    /// it fails. What a process that exits first would have left (its partial file) is not there.
    package var abandonment: @Sendable () -> Void {
        let (root, names) = (root, names)
        return {
            unlinkat(root.directory.descriptor, names.partial, 0)
            unlinkat(root.directory.descriptor, names.folder, AT_REMOVEDIR)
        }
    }

    /// Removes the partial file and the directory, whatever state they are in. Idempotent.
    package func discard() {
        guard live else { return }
        live = false
        if descriptor >= 0 {
            close(descriptor)
            descriptor = -1
        }
        remove()
    }

    private func remove() {
        unlinkat(root.directory.descriptor, names.partial, 0)
        unlinkat(root.directory.descriptor, names.folder, AT_REMOVEDIR)
    }
}

@available(*, unavailable)
extension PartialAttachment: Sendable {}
