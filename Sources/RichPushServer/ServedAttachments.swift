import RichPush
import RichPushHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// The attachments this server stored, which `GET /v1/attachments/<directory>/<file>` may serve: nothing else
/// under the root (another process's files, the cache's links, names a client makes up) is ever opened.
package final class ServedAttachments: Sendable {
    package struct Entry: Sendable {
        package let mime: String
        package let sha256: String
        package let bytes: Int
    }

    /// What is kept of an entry: the digest as its 32 bytes, not as 64 hex digits (a string of its own, 96 bytes
    /// of heap each); `mime` is one of the media types' literals, which take no heap; the file's identity when it
    /// was made (its device, inode, modification time and size: see `FileIdentity` for why not its change time;
    /// 32 bytes, the size among them), 80 bytes in all, as before the size moved into the identity.
    private struct Stored {
        let mime: String
        let digest: Digest
        let identity: FileIdentity
    }

    /// The most attachments remembered; the oldest are forgotten first (their files stay until `gc`).
    /// Default 98,304: about a day of unique images at one or two a second, and the most a table of 2^17 slots
    /// holds at the dictionary's 3/4 load. At 100,000 the table doubled (to 2^18 slots) as the index filled, and
    /// the copy made then raised the service's peak RSS by about 19 MiB in the benchmark.
    package static let defaultCapacity = 98_304

    /// A remembered attachment: its name and what is kept of it.
    private struct Remembered {
        let name: Name
        var stored: Stored
    }

    /// The entries in a ring, in the order they came (once `capacity` are there, `oldest` goes next), and an index
    /// of their places by the name's `key` (the low word of its directory's random UUID; a key another name shares
    /// is rare, and a look-up compares the whole name). The ring holds the entries without a dictionary's spare
    /// slots, and the index is 12 bytes a slot: at capacity 13 MB in all, where a dictionary of names to entries and
    /// a ring of names took 20 MB (its 2^17 slots of 120 bytes, the ring's 40 a name), and each payload's update
    /// looked up 15 MB of table at random.
    private struct State {
        var ring: [Remembered] = []
        var oldest = 0
        var places: [UInt64: Int32] = [:]

        func stored(_ name: Name) -> Stored? {
            guard let place = places[name.key] else { return nil }
            let entry = ring[Int(place)]
            return entry.name == name ? entry.stored : nil
        }

        mutating func remember(_ name: Name, _ stored: Stored, capacity: Int) {
            if let place = places[name.key].map(Int.init), ring[place].name == name {
                ring[place].stored = stored
                return
            }
            let entry = Remembered(name: name, stored: stored)
            let place: Int
            if ring.count < capacity {
                place = ring.count
                ring.append(entry)
            } else {
                // The oldest goes first, and the new entry takes its place in the ring; its key leaves the index
                // unless another name's entry has it now.
                place = oldest
                let forgotten = ring[place].name.key
                if places[forgotten] == Int32(place) { places[forgotten] = nil }
                ring[place] = entry
                oldest = (oldest + 1) % capacity
            }
            places[name.key] = Int32(place)
        }
    }

    private let root: String
    private let capacity: Int
    private let state: LockedValue<State>

    package init(root: String, capacity: Int = defaultCapacity) {
        self.root = root
        self.capacity = capacity
        state = LockedValue(State())
    }

    /// Remembers a result's attachments, each with the identity of its file as the engine made it
    /// (`FetchedMedia.identity`), or, for one the engine gave none (a test double, a result from elsewhere), its
    /// file's identity now (one `lstat`). One of another size than its media says, or (without an identity from the
    /// engine) whose file is already gone or not a regular file, is not remembered.
    package func remember(_ result: EnrichmentResult) {
        guard !result.attachments.isEmpty else { return }
        // Everything but the table's update before the lock (one for the whole service, which every payload's task
        // takes): the identities, the names and the digests parsed.
        let entries = result.attachments.compactMap { attachment -> (key: Name, stored: Stored)? in
            let media = attachment.media
            guard let identity = Self.identity(of: media), let key = Self.key(media.path),
                let digest = Digest(hex: media.sha256)
            else { return nil }
            return (key, Stored(mime: media.type.mime, digest: digest, identity: identity))
        }
        guard !entries.isEmpty else { return }
        state.withLock { state in
            for (key, stored) in entries { state.remember(key, stored, capacity: capacity) }
        }
    }

    /// The identity of a media's file as the engine made it, or its file's now (one `lstat`) when the engine gave
    /// none; nil when it is not a regular file of the media's size.
    private static func identity(of media: FetchedMedia) -> FileIdentity? {
        // The identity the engine read on the open file it wrote: the same file, or a stricter one, than an
        // `lstat` now would find (a file put in its place since is refused when served), without a look-up by
        // path for every attachment (about 4 us of the service's CPU a payload, in its profile).
        if let made = media.identity {
            return made.bytes == media.bytes ? made : nil
        }
        var info = stat()
        guard lstat(media.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, Int(info.st_size) == media.bytes
        else { return nil }
        return FileIdentity(info)
    }

    /// `<directory>/<file>`: the last two components of an attachment's path, as a `Name`. Found on the path's
    /// UTF-8 bytes in place (this runs for every result: splitting by characters, then walking the string's
    /// indices, showed in the service's profile); a bridged string's are copied first.
    static func key(_ path: String) -> Name? {
        if let found = path.utf8.withContiguousStorageIfAvailable(Self.key(bytes:)) { return found }
        return Array(path.utf8).withUnsafeBufferPointer(Self.key(bytes:))
    }

    private static func key(bytes: UnsafeBufferPointer<UInt8>) -> Name? {
        guard let last = bytes.lastIndex(of: UInt8(ascii: "/")), last != 0,
            let previous = bytes[..<last].lastIndex(of: UInt8(ascii: "/"))
        else { return nil }
        return Name.parse(UnsafeBufferPointer(rebasing: bytes[(previous + 1)...]))
    }

    /// The open file and what it is, for `<directory>/<file>`; nil for anything this server did not store, or
    /// whose file is gone, is not the file stored (another renamed over it, or written in place: its device, inode,
    /// modification time or size differ), or was replaced by anything but a regular file. Each component is opened
    /// without following a link.
    package func open(_ name: String) -> (descriptor: Int32, entry: Entry)? {
        // Only a name of the store's shape is looked up; it then holds no `..`, no encoded byte, no third part.
        guard let key = Name(name.utf8[...]), let stored = state.withLock({ $0.stored(key) }) else { return nil }
        let entry = Entry(mime: stored.mime, sha256: stored.digest.hex, bytes: stored.identity.bytes)
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
        guard fstat(file, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, Int(info.st_size) == entry.bytes,
            FileIdentity(info) == stored.identity
        else {
            close(file)
            return nil
        }
        return (file, entry)
    }
}

/// An attachment's name under the root, `<uuid>/<uuid>.<ext>` as the store makes it, kept as five words: the 32
/// bytes of its UUIDs and its extension of at most 8 bytes. An index of 98,304 names as strings (73 bytes each, on
/// the heap) cost a String made, hashed and freed per result, about 3 us of the service's 45 us a request (measured
/// by leaving `remember` out); read through a copied array and with the extension a String, the name still cost
/// about 1 us a result in the service's profile (parsing, hashing a string, comparing).
struct Name: Hashable {
    /// The directory's UUID, its high and low 64 bits.
    private let directoryHigh: UInt64
    private let directoryLow: UInt64
    /// The file's UUID, likewise.
    private let fileHigh: UInt64
    private let fileLow: UInt64
    /// The extension's bytes, the first in the lowest byte; zero bytes after its end (it has at least one byte,
    /// none of them zero, so no two extensions share a word).
    private let fileExtension: UInt64

    /// The index's key of the name: its directory's UUID's low word (random but for its 2 variant bits).
    var key: UInt64 { directoryLow }

    /// The name `text` spells: two lowercase UUIDs, the second followed by `.` and an extension of 1-8 lowercase
    /// letters or digits; nil for anything else.
    init?(_ text: Substring.UTF8View) {
        // A native string's bytes are read in place; only a bridged one is copied first.
        let parsed =
            text.withContiguousStorageIfAvailable { Self.parse($0) }
            ?? Array(text).withUnsafeBufferPointer { Self.parse($0) }
        guard let parsed else { return nil }
        self = parsed
    }

    private init(directory: (UInt64, UInt64), file: (UInt64, UInt64), fileExtension: UInt64) {
        (directoryHigh, directoryLow) = directory
        (fileHigh, fileLow) = file
        self.fileExtension = fileExtension
    }

    /// The name `bytes` spell, as `init?(_:)` reads them.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Name? {
        guard (36 + 1 + 36 + 2...36 + 1 + 36 + 9).contains(bytes.count), bytes[36] == UInt8(ascii: "/"),
            bytes[73] == UInt8(ascii: "."), let directory = uuid(bytes, from: 0), let file = uuid(bytes, from: 37)
        else { return nil }
        var fileExtension: UInt64 = 0
        for index in 74..<bytes.count {
            let byte = bytes[index]
            guard (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) else { return nil }
            fileExtension |= UInt64(byte) << (8 * UInt64(index - 74))
        }
        return Name(directory: directory, file: file, fileExtension: fileExtension)
    }

    /// The 128 bits of the lowercase UUID `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` at `start`, or nil.
    private static func uuid(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> (UInt64, UInt64)? {
        var words: (UInt64, UInt64) = (0, 0)
        var digits = 0
        for offset in 0..<36 {
            let byte = bytes[start + offset]
            if offset == 8 || offset == 13 || offset == 18 || offset == 23 {
                guard byte == UInt8(ascii: "-") else { return nil }
                continue
            }
            guard let value = hexValue(byte, lowercaseOnly: true) else { return nil }
            if digits < 16 { words.0 = words.0 << 4 | UInt64(value) } else { words.1 = words.1 << 4 | UInt64(value) }
            digits += 1
        }
        return words
    }
}

/// A SHA-256 digest as its 32 bytes, read from and written as 64 lowercase hex digits.
struct Digest: Sendable {
    private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    /// The digest that `hex` spells (64 hex digits, either case), or nil. Read on its UTF-8 bytes in place (a
    /// bridged string's are copied first): this runs for every result.
    init?(hex: String) {
        let utf8 = hex.utf8
        guard utf8.count == 64 else { return nil }
        let parsed =
            utf8.withContiguousStorageIfAvailable { Self.words(hex: $0) }
            ?? Array(utf8).withUnsafeBufferPointer { Self.words(hex: $0) }
        guard let parsed else { return nil }
        words = parsed
    }

    /// The four words 64 hex digits spell, the first digit highest; nil for a byte that is no hex digit.
    private static func words(hex digits: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64, UInt64, UInt64)? {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        let parsed = withUnsafeMutableBytes(of: &words) { raw -> Bool in
            let words = raw.bindMemory(to: UInt64.self)
            for (index, digit) in digits.enumerated() {
                guard let value = hexValue(digit, lowercaseOnly: false) else { return false }
                words[index / 16] = words[index / 16] << 4 | UInt64(value)
            }
            return true
        }
        return parsed ? words : nil
    }

    /// The digest that these 32 bytes are, or nil for another count.
    init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        withUnsafeMutableBytes(of: &words) { raw in
            let words = raw.bindMemory(to: UInt64.self)
            for (index, byte) in bytes.enumerated() { words[index / 8] = words[index / 8] << 8 | UInt64(byte) }
        }
    }

    /// Whether it is `other`, in a time that does not depend on where they differ: every word is compared.
    func isSame(as other: Digest) -> Bool {
        ((words.0 ^ other.words.0) | (words.1 ^ other.words.1) | (words.2 ^ other.words.2)
            | (words.3 ^ other.words.3)) == 0
    }

    /// The 64 lowercase hex digits.
    var hex: String {
        [words.0, words.1, words.2, words.3].map(\.paddedHex).joined()
    }
}

extension UInt64 {
    /// The value as 16 lowercase hex digits, zeros in front.
    var paddedHex: String {
        let digits = String(self, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
