import Foundation
import RichPush
import Testing

@testable import RichPushServer

/// The served attachments' digests, kept as bytes and given back as hex (no I/O).
@Suite struct DigestTests {
    static let sample = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    @Test("64 hex digits come back as they went in, in lowercase")
    func roundTrip() throws {
        #expect(try #require(Digest(hex: Self.sample)).hex == Self.sample)
        #expect(try #require(Digest(hex: Self.sample.uppercased())).hex == Self.sample)
        let zeros = String(repeating: "0", count: 63) + "1"
        #expect(try #require(Digest(hex: zeros)).hex == zeros)
    }

    @Test(
        "anything but 64 hex digits is no digest",
        arguments: ["", "abc", String(sample.dropLast()), sample + "0", String(sample.dropLast()) + "g"])
    func invalid(text: String) {
        #expect(Digest(hex: text) == nil)
    }
}

/// The served attachments' names, kept as their UUIDs' bits (no I/O).
@Suite struct ServedNameTests {
    static let directory = "0f8fad5b-d9cb-469f-a165-70867728950e"
    static let file = "7c9e6679-7425-40de-944b-e07fc1f90ae7"

    @Test("the store's shape is a name: equal names are equal keys, different ones are not")
    func valid() throws {
        let name = try #require(Name("\(Self.directory)/\(Self.file).jpg".utf8[...]))
        #expect(Name("\(Self.directory)/\(Self.file).jpg".utf8[...]) == name)
        #expect(Name("\(Self.directory)/\(Self.file).png".utf8[...]) != name)
        #expect(Name("\(Self.file)/\(Self.directory).jpg".utf8[...]) != name)
        #expect(Set([name, try #require(Name("\(Self.file)/\(Self.file).m4a".utf8[...]))]).count == 2)
        // Extensions of up to 8 bytes, each its own key (kept in one word).
        let eight = try #require(Name("\(Self.directory)/\(Self.file).abcdefgh".utf8[...]))
        #expect(Name("\(Self.directory)/\(Self.file).abcdefg".utf8[...]) != eight)
        #expect(Name("\(Self.directory)/\(Self.file).bbcdefgh".utf8[...]) != eight)
        // The last two components of a stored path.
        #expect(ServedAttachments.key("/tmp/richpush/\(Self.directory)/\(Self.file).jpg") == name)
    }

    @Test(
        "anything else is no name: other shapes, capitals, dots, encodings, a third part",
        arguments: [
            "", "\(directory)", "\(directory)/\(file)", "\(directory)/\(file).", "\(directory)/\(file).JPG",
            "\(directory.uppercased())/\(file).jpg", "../\(file).jpg", "\(directory)/../\(file).jpg",
            "\(directory)/%2e%2e.jpg", "\(directory)/\(file).jpg/x", "\(directory)/\(file).toolongext",
            "\(directory)/\(file).abcdefghi",
            "\(directory)x\(file).jpg", "\(directory)/\(file)xjpg", "0f8fad5b-d9cb-469f-a165-70867728950g/\(file).jpg",
        ])
    func invalid(text: String) {
        #expect(Name(text.utf8[...]) == nil)
    }
}

/// The index of attachments the service serves: bounded, oldest forgotten first (real files, no HTTP).
@Suite struct ServedAttachmentsTests {
    @Test("past its capacity the index forgets the oldest first, and serves what it still holds")
    func evictsOldestFirst() throws {
        let root = NSTemporaryDirectory() + "served-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let served = ServedAttachments(root: root, capacity: 2)
        var names: [String] = []
        for index in 0..<4 {
            let directory = UUID().uuidString.lowercased()
            let file = UUID().uuidString.lowercased() + ".jpg"
            try FileManager.default.createDirectory(atPath: root + "/" + directory, withIntermediateDirectories: true)
            let bytes = [UInt8](repeating: UInt8(index), count: 10 + index)
            #expect(FileManager.default.createFile(atPath: root + "/\(directory)/\(file)", contents: Data(bytes)))
            let media = FetchedMedia(
                path: root + "/\(directory)/\(file)", directory: root + "/" + directory, type: .jpeg,
                bytes: bytes.count, sha256: String(repeating: String(index), count: 64))
            let attachment = EnrichmentResult.Attachment(
                identifier: "a", source: "s", field: "f", convention: "c", media: media)
            served.remember(EnrichmentResult(outcome: .complete, content: nil, attachments: [attachment]))
            names.append("\(directory)/\(file)")
        }
        for (index, name) in names.enumerated() {
            let opened = served.open(name)
            if let (descriptor, _) = opened { close(descriptor) }
            #expect((opened != nil) == (index >= 2), "entry \(index)")
            #expect(opened?.entry.sha256 == (index >= 2 ? String(repeating: String(index), count: 64) : nil))
        }
    }

    @Test("names sharing the index's key (their directories' UUIDs' low words): the later is served, never the other's")
    func sharedKey() throws {
        let root = NSTemporaryDirectory() + "served-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let served = ServedAttachments(root: root, capacity: 3)
        /// A stored file in `directory`, remembered; its name.
        func remembered(_ directory: String, _ index: Int) throws -> String {
            let file = UUID().uuidString.lowercased() + ".jpg"
            let path = root + "/\(directory)/\(file)"
            try FileManager.default.createDirectory(atPath: root + "/" + directory, withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: path, contents: Data([UInt8](repeating: 1, count: 10))))
            remember(
                served, path: path, directory: root + "/" + directory, bytes: 10,
                sha256: String(repeating: String(index), count: 64))
            return "\(directory)/\(file)"
        }
        func digest(_ name: String) -> String? {
            guard let (descriptor, entry) = served.open(name) else { return nil }
            close(descriptor)
            return entry.sha256
        }
        // Two directories whose UUIDs differ only in their high words.
        let low = "-8165-70867728950e"
        let first = try remembered("0f8fad5b-d9cb-469f" + low, 1)
        let second = try remembered("1f8fad5b-d9cb-469f" + low, 2)
        #expect(digest(first) == nil)
        #expect(digest(second) == String(repeating: "2", count: 64))
        // The first is forgotten first (capacity 3): the second keeps its place in the index.
        let others = try (3...4).map { try remembered(UUID().uuidString.lowercased(), $0) }
        #expect(digest(second) == String(repeating: "2", count: 64))
        #expect(others.map(digest) == [String(repeating: "3", count: 64), String(repeating: "4", count: 64)])
        // Then the second, and its key with it.
        _ = try remembered(UUID().uuidString.lowercased(), 5)
        #expect(digest(second) == nil)
        #expect(digest(first) == nil)
    }

    @Test(
        "a same-size file renamed over a stored one is not served under the stored ETag; links made to it are no change"
    )
    func replacedFile() throws {
        let root = NSTemporaryDirectory() + "served-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let served = ServedAttachments(root: root)
        let directory = UUID().uuidString.lowercased()
        let file = UUID().uuidString.lowercased() + ".jpg"
        let path = root + "/\(directory)/\(file)"
        try FileManager.default.createDirectory(atPath: root + "/" + directory, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: path, contents: Data([UInt8](repeating: 1, count: 64))))
        let media = FetchedMedia(
            path: path, directory: root + "/" + directory, type: .jpeg, bytes: 64,
            sha256: String(repeating: "a", count: 64))
        served.remember(
            EnrichmentResult(
                outcome: .complete, content: nil,
                attachments: [
                    EnrichmentResult.Attachment(identifier: "a", source: "s", field: "f", convention: "c", media: media)
                ])
        )
        func opens() -> Bool {
            guard let (descriptor, _) = served.open("\(directory)/\(file)") else { return false }
            close(descriptor)
            return true
        }
        #expect(opens())
        // A hard link elsewhere changes the inode's change time, as the media cache's links do: still the file stored.
        try FileManager.default.linkItem(atPath: path, toPath: root + "/\(directory)/cache-link")
        #expect(opens())
        // Another file of the same size, renamed over it.
        let other = root + "/\(directory)/other"
        #expect(FileManager.default.createFile(atPath: other, contents: Data([UInt8](repeating: 2, count: 64))))
        #expect(rename(other, path) == 0)
        #expect(!opens())
    }

    @Test("the identity the engine read as it made the file is kept: a file put in its place since is refused")
    func identityAsMade() throws {
        let root = NSTemporaryDirectory() + "served-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let served = ServedAttachments(root: root)
        let directory = UUID().uuidString.lowercased()
        try FileManager.default.createDirectory(atPath: root + "/" + directory, withIntermediateDirectories: true)
        /// A stored file of 64 bytes, remembered with the identity `made` gives it (nil: none from the engine).
        func remembered(_ made: (String) -> FileIdentity?) -> String {
            let file = UUID().uuidString.lowercased() + ".jpg"
            let path = root + "/\(directory)/\(file)"
            #expect(FileManager.default.createFile(atPath: path, contents: Data([UInt8](repeating: 1, count: 64))))
            remember(
                served, path: path, directory: root + "/" + directory, bytes: 64,
                sha256: String(repeating: "a", count: 64), identity: made(path))
            return "\(directory)/\(file)"
        }
        func opens(_ name: String) -> Bool {
            guard let (descriptor, _) = served.open(name) else { return false }
            close(descriptor)
            return true
        }
        /// The file's identity now, then another file of the same size renamed over it: what `remember` is handed
        /// is the first file's identity, its path leads to the second.
        func replacedAfterMaking(_ path: String) -> FileIdentity? {
            let descriptor = Glibc.open(path, O_RDONLY)
            defer { close(descriptor) }
            let made = FileIdentity(descriptor: descriptor)
            let other = path + ".other"
            #expect(FileManager.default.createFile(atPath: other, contents: Data([UInt8](repeating: 2, count: 64))))
            #expect(rename(other, path) == 0)
            return made
        }
        // Made, replaced, then remembered: refused, where an `lstat` at `remember` would have taken the replacement.
        #expect(!opens(remembered(replacedAfterMaking)))
        // Made and remembered as it is: served, without an `lstat` of its own.
        #expect(
            opens(
                remembered { path in
                    let descriptor = Glibc.open(path, O_RDONLY)
                    defer { close(descriptor) }
                    return FileIdentity(descriptor: descriptor)
                }))
        // An identity of another size than the media says is not remembered.
        #expect(!opens(remembered { _ in FileIdentity(stat()) }))
    }
}

/// Has `served` remember a result of one attachment: the JPEG at `path` (in `directory`), of `bytes` bytes, with
/// `sha256` and the identity the engine read (nil: none).
private func remember(
    _ served: ServedAttachments, path: String, directory: String, bytes: Int, sha256: String,
    identity: FileIdentity? = nil
) {
    var media = FetchedMedia(path: path, directory: directory, type: .jpeg, bytes: bytes, sha256: sha256)
    media.identity = identity
    served.remember(
        EnrichmentResult(
            outcome: .complete, content: nil,
            attachments: [
                EnrichmentResult.Attachment(identifier: "a", source: "s", field: "f", convention: "c", media: media)
            ]))
}
