#if canImport(Glibc)
    import Glibc
#endif
import RichPush

/// The attachments this server stored, which `GET /v1/attachments/<directory>/<file>` may serve: nothing else
/// under the root (another process's files, the cache's links, names a client makes up) is ever opened.
package final class ServedAttachments: Sendable {
    package struct Entry: Sendable {
        package let mime: String
        package let sha256: String
        package let bytes: Int
    }

    /// The most attachments remembered; the oldest are forgotten first (their files stay until `gc`).
    /// Default 100,000: a day of unique images at a few per second, about 20 MB of index.
    package static let defaultCapacity = 100_000

    private struct State {
        var entries: [String: Entry] = [:]
        var order: [String] = []
        var head = 0
    }

    private let root: String
    private let capacity: Int
    private let state = LockedValue(State())

    package init(root: String, capacity: Int = defaultCapacity) {
        self.root = root
        self.capacity = capacity
    }

    /// Remembers a result's attachments.
    package func remember(_ result: EnrichmentResult) {
        guard !result.attachments.isEmpty else { return }
        state.withLock { state in
            for attachment in result.attachments {
                let media = attachment.media
                guard let key = Self.key(media.path) else { continue }
                if state.entries[key] == nil { state.order.append(key) }
                state.entries[key] = Entry(mime: media.type.mime, sha256: media.sha256, bytes: media.bytes)
            }
            while state.entries.count > capacity, state.head < state.order.count {
                state.entries[state.order[state.head]] = nil
                state.head += 1
            }
            if state.head > capacity {
                state.order.removeFirst(state.head)
                state.head = 0
            }
        }
    }

    /// `<directory>/<file>`: the last two components of an attachment's path (found on its UTF-8 bytes: this
    /// runs for every result, and splitting by characters showed in the service's profile).
    static func key(_ path: String) -> String? {
        let bytes = path.utf8
        guard let last = bytes.lastIndex(of: UInt8(ascii: "/")), last != bytes.startIndex,
            let previous = bytes[..<last].lastIndex(of: UInt8(ascii: "/")),
            bytes.index(after: previous) < last, bytes.index(after: last) < bytes.endIndex
        else { return nil }
        return String(path[path.index(after: previous)...])
    }

    /// The open file and what it is, for `<directory>/<file>`; nil for anything this server did not store, or
    /// whose file is gone, changed size, or was replaced by anything but a regular file. Each component is
    /// opened without following a link.
    package func open(_ name: String) -> (descriptor: Int32, entry: Entry)? {
        guard let entry = state.withLock({ $0.entries[name] }) else { return nil }
        let parts = name.split(separator: "/").map(String.init)
        let rootDescriptor = Glibc.open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard rootDescriptor >= 0 else { return nil }
        defer { close(rootDescriptor) }
        let directory = openat(rootDescriptor, parts[0], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard directory >= 0 else { return nil }
        defer { close(directory) }
        let file = openat(directory, parts[1], O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard file >= 0 else { return nil }
        var info = stat()
        guard fstat(file, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, Int(info.st_size) == entry.bytes else {
            close(file)
            return nil
        }
        return (file, entry)
    }
}
