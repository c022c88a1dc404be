import CSystem

/// The process's limit on open files (RLIMIT_NOFILE), which bounds a server's connections before any limit of its
/// own does.
package enum OpenFilesLimit {
    /// Raises the soft limit to the hard one, as a server that holds a descriptor a connection needs; returns the
    /// soft and hard limits after (nil when they cannot be read).
    ///
    /// Why: a shell's soft limit is often 1,024 (the hard one far higher), under `serve`'s default
    /// `--max-connections` of 1,024 for each listener plus the descriptors of its fetches, files and logs: 1,005 idle
    /// connections took every descriptor, and a health probe or a payload then waited for its client's timeout,
    /// never given the 503 the connection limit answers, with nothing logged. Raising the soft limit needs no
    /// privilege; only the hard one does. libmicrohttpd waits with epoll, libcurl with poll or epoll: no descriptor
    /// above 1,024 meets a `select`.
    package static func raise() -> (soft: UInt64, hard: UInt64)? {
        var soft: UInt64 = 0
        var hard: UInt64 = 0
        let failure = csystem_raise_open_files(&soft, &hard)
        // The limits are read before anything is raised: zero for both means they could not be.
        if failure != 0, soft == 0, hard == 0 { return nil }
        return (soft, hard)
    }

    /// The descriptors a server keeps for its own work besides its connections: the fetch loop's connections
    /// (64 by default), attachments being written, the media cache's files, logs, libraries. 256.
    package static let reserve = 256
}
