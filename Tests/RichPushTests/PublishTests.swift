import CSystem
import FixtureOrigin
import Foundation
import Testing

@testable import RichPush
@testable import RichPushMedia
@testable import RichPushTransform

/// Publishing: attachments written content-addressed to a directory devices fetch from, and the vendor's field in
/// the content rewritten to the published URL.
@Suite("Publishing: validated media for devices to fetch", .offPool)
struct PublishTests {
    let directory = NSTemporaryDirectory() + "richpush-publish-" + UUID().uuidString
    static let base = "https://cdn.example.com/push"

    func bed(converter: Bool = false) throws -> TestBed {
        let directory = directory
        return try TestBed { configuration in
            configuration.publisher = DirectoryPublisher(directory: directory, baseURL: Self.base + "/")
            if converter { configuration.transform.converter = VipsConverter() }
        }
    }

    func published() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    @Test(
        """
        a file is published once, whole, world-readable, named by its SHA-256; one already there is kept when it is \
        the same bytes, else replaced (other bytes, a link: never written through)
        """)
    func directoryPublisher() throws {
        let source = NSTemporaryDirectory() + "richpush-source-" + UUID().uuidString + ".jpg"
        try Data(fixture("photo.jpg")).write(to: URL(fileURLWithPath: source))
        defer { try? FileManager.default.removeItem(atPath: source) }
        let sha = TransformStepTests.sha256(of: "photo.jpg")
        let media = FetchedMedia(
            path: source, directory: "", type: .jpeg, bytes: fixture("photo.jpg").count, sha256: sha)
        let publisher = DirectoryPublisher(directory: directory, baseURL: Self.base)
        #expect(try publisher.publish(media) == "\(Self.base)/\(sha).jpg")
        #expect(published() == ["\(sha).jpg"], "no temporary file is left")
        let target = directory + "/\(sha).jpg"
        #expect(FileManager.default.contents(atPath: target) == Data(fixture("photo.jpg")))
        let mode = try #require(FileManager.default.attributesOfItem(atPath: target)[.posixPermissions] as? Int)
        #expect(mode == 0o644)
        // Idempotent: the same bytes again change nothing (the file in place is kept, as another process made it).
        let inode = { try #require(FileManager.default.attributesOfItem(atPath: target)[.systemFileNumber] as? Int) }
        let first = try inode()
        #expect(try publisher.publish(media) == "\(Self.base)/\(sha).jpg")
        #expect(try inode() == first)
        #expect(try DirectoryPublisher(directory: directory, baseURL: Self.base).publish(media).hasSuffix(".jpg"))
        #expect(try inode() == first, "a new publisher reads the file to know it, and keeps it")
        // Other bytes at the name (planted, or a file cut short), of the same size or not: replaced by the real ones.
        let bytes = fixture("photo.jpg")
        for planted in [Data("<html>not the image</html>".utf8), Data(repeating: 0x41, count: bytes.count)] {
            try planted.write(to: URL(fileURLWithPath: target))
            #expect(try publisher.publish(media) == "\(Self.base)/\(sha).jpg")
            #expect(FileManager.default.contents(atPath: target) == Data(bytes))
        }
        // A link at the name, to a file elsewhere or to nothing: the link is replaced, its target left alone.
        let elsewhere = source + ".victim"
        try Data("victim".utf8).write(to: URL(fileURLWithPath: elsewhere))
        defer { try? FileManager.default.removeItem(atPath: elsewhere) }
        for pointee in [elsewhere, directory + "/nothing-here"] {
            try FileManager.default.removeItem(atPath: target)
            try FileManager.default.createSymbolicLink(atPath: target, withDestinationPath: pointee)
            #expect(try publisher.publish(media) == "\(Self.base)/\(sha).jpg")
            let kind = try FileManager.default.attributesOfItem(atPath: target)[.type] as? FileAttributeType
            #expect(kind == .typeRegular)
            #expect(FileManager.default.contents(atPath: target) == Data(bytes))
        }
        #expect(FileManager.default.contents(atPath: elsewhere) == Data("victim".utf8))
        #expect(published() == ["\(sha).jpg"], "no temporary file is left")
        // The right bytes, in a file not as this publisher leaves one (others may write to it, it is linked
        // elsewhere, or another user's: rewritable in place after the check): replaced by a file of our own.
        let hardLink = directory + "/elsewhere.jpg"
        defer { try? FileManager.default.removeItem(atPath: hardLink) }
        let owners: [(String, () throws -> Void)] = [
            ("mode 0666", { chmod(target, 0o666) }),
            ("hard-linked", { #expect(link(target, hardLink) == 0) }),
            ("another user's", { #expect(geteuid() != 0 || chown(target, 65534, 65534) == 0) }),
        ]
        for (name, plant) in owners {
            try? FileManager.default.removeItem(atPath: hardLink)
            try Data(bytes).write(to: URL(fileURLWithPath: target))
            chmod(target, 0o644)
            let planted = try inode()
            try plant()
            #expect(try publisher.publish(media) == "\(Self.base)/\(sha).jpg")
            #expect(try inode() != planted, "\(name): kept")
            let attributes = try FileManager.default.attributesOfItem(atPath: target)
            #expect(attributes[.posixPermissions] as? Int == 0o644, "\(name)")
            #expect(attributes[.ownerAccountID] as? Int == Int(geteuid()), "\(name)")
            #expect(FileManager.default.contents(atPath: target) == Data(bytes))
        }
        try? FileManager.default.removeItem(atPath: hardLink)
        // Without a hash to name it by, nothing is published.
        var unnamed = media
        unnamed.sha256 = "../../etc/passwd"
        #expect(throws: PublishFailure.self) { try publisher.publish(unnamed) }
    }

    @Test(
        """
        a copy on its way into the directory has no name there (a process killed mid-copy leaves nothing), is \
        named only when linked, and replaces a file through a hidden name it does not leave
        """)
    func stagedWithoutName() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let probe = try DirectoryPublisher.Staged(in: directory, for: "probe.jpg")
        let fileSystemMakesUnnamed = !probe.named
        probe.discard()
        // ext4 and tmpfs (this project's machines) make them: there, an unnamed file not made is a failure.
        let type = try ChildProcess.runToEnd("/usr/bin/stat", ["-f", "-c", "%T", directory]).outputText
        if ["ext2/ext3", "tmpfs"].contains(type.trimmingCharacters(in: .whitespacesAndNewlines)) {
            #expect(fileSystemMakesUnnamed, "\(type) makes unnamed files")
        }
        // The unnamed kind where this file system makes one (ext4, tmpfs, xfs, btrfs; not NFS), and the named
        // fallback on any.
        for unnamed in fileSystemMakesUnnamed ? [true, false] : [false] {
            let kind = unnamed ? "unnamed" : "named"
            let staged = try DirectoryPublisher.Staged(in: directory, for: "a.jpg", unnamed: unnamed)
            defer { staged.discard() }
            #expect(staged.named == !unnamed)
            #expect(Array("whole".utf8).withUnsafeBytes { FileSystem.writeAll(staged.descriptor, $0) } == nil)
            let hidden = String(staged.hidden.dropFirst(directory.count + 1))
            #expect(published() == (unnamed ? [] : [hidden]), "\(kind): while the copy is written")
            #expect(staged.link(as: directory + "/a.jpg") == 0)
            #expect(staged.link(as: directory + "/a.jpg") == EEXIST)
            try Data("other".utf8).write(to: URL(fileURLWithPath: directory + "/b.jpg"))
            #expect(staged.replace(directory + "/b.jpg") == 0)
            #expect(published() == ["a.jpg", "b.jpg"], "\(kind): no hidden name left")
            #expect(FileManager.default.contents(atPath: directory + "/b.jpg") == Data("whole".utf8))
            // Dropped before it was linked, a copy leaves nothing.
            let dropped = try DirectoryPublisher.Staged(in: directory, for: "c.jpg", unnamed: unnamed)
            #expect(Array("half".utf8).withUnsafeBytes { FileSystem.writeAll(dropped.descriptor, $0) } == nil)
            dropped.discard()
            #expect(published() == ["a.jpg", "b.jpg"], "\(kind)")
            for name in ["a.jpg", "b.jpg"] { try FileManager.default.removeItem(atPath: directory + "/" + name) }
        }
    }

    @Test("the vendor's field is rewritten to the published URL; the attachment records it")
    func rewrite() async throws {
        let bed = try bed()
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(TestBed.adobePayload(bed.url("/media/photo.jpg")))
            let sha = TransformStepTests.sha256(of: "photo.jpg")
            #expect(result.content?.root["adb_media"]?.stringValue == "\(Self.base)/\(sha).jpg")
            #expect(result.attachments.first?.source == bed.url("/media/photo.jpg"))
            let json = try #require(JSONSerialization.jsonObject(with: Data(result.jsonBytes())) as? [String: Any])
            let attachment = try #require((json["attachments"] as? [[String: Any]])?.first)
            #expect(attachment["published_url"] as? String == "\(Self.base)/\(sha).jpg")
            #expect(published() == ["\(sha).jpg"])
        }
    }

    @Test("OneSignal's URL given with spaces around it, which OneSignal trims, is rewritten too")
    func oneSignalPadded() async throws {
        let bed = try bed()
        let url = bed.url("/media/photo.jpg")
        let text = #"{"aps":{"alert":" \#(url) ","mutable-content":1},"att":{"i":" \t\#(url) "}}"#
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(try PushPayload(parsing: Array(text.utf8)))
            let sha = TransformStepTests.sha256(of: "photo.jpg")
            #expect(result.outcome == .complete, "\(result.problems)")
            #expect(result.content?.root["att"]?.objectValue?["i"]?.stringValue == "\(Self.base)/\(sha).jpg")
            // Only OneSignal's own fields are read trimmed: an alert holding the URL with spaces is text.
            #expect(result.content?.root["aps"]?.objectValue?["alert"]?.stringValue == " \(url) ")
            #expect(result.attachments.first?.source == url)
        }
    }

    @Test("inside ZEGOCLOUD's JSON-string payload the URL is rewritten and the payload stays a string")
    func zego() async throws {
        let bed = try bed()
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(try bed.fixturePayload("zego-string.json"))
            let sha = TransformStepTests.sha256(of: "anim.gif")
            let text = try #require(result.content?.root["payload"]?.stringValue, "still a string")
            let inner = try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            #expect(inner["image_attachment"] as? String == "\(Self.base)/\(sha).gif")
            #expect(inner["call_id"] as? String == "8f2c", "the rest of the string kept")
            // Everything outside it as it came.
            #expect(result.content?.root["aps"] == (try bed.fixturePayload("zego-string.json")).root["aps"])
        }
    }

    @Test(
        """
        a custom convention's URL inside a JSON string at any key is rewritten there, as are strings equal to it in \
        JSON strings nested deeper and in arrays; each stays a string, and a string merely containing the URL is kept
        """)
    func customJSONString() async throws {
        let directory = directory
        let bed = try TestBed { configuration in
            configuration.publisher = DirectoryPublisher(directory: directory, baseURL: Self.base + "/")
            configuration.conventions.register(
                KeyPathConvention(name: "legacy", path: ["extra", "@json", "image"], identifier: "legacy"))
        }
        let url = bed.url("/media/photo.jpg")
        let sha = TransformStepTests.sha256(of: "photo.jpg")
        let published = "\(Self.base)/\(sha).jpg"
        func encoded(_ value: Any) throws -> String {
            String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]), as: UTF8.self)
        }
        let deep = try encoded(["link": url, "note": "see \(url)"])
        let extra = try encoded(["image": url, "deep": deep, "list": [url, 7], "title": "Caf\u{e9}"])
        let payload = try PushPayload(
            parsing: JSONSerialization.data(withJSONObject: [
                "aps": ["alert": "hi", "mutable-content": 1], "extra": extra,
                "elsewhere": try encoded([url]), "mention": "\(url) ",
            ]))
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(payload)
            #expect(result.problems.isEmpty, "\(result.problems)")
            #expect(result.attachments.map(\.convention) == ["legacy"])
            let root = try #require(result.content?.root)
            let text = try #require(root["extra"]?.stringValue, "extra is still a string")
            let inner = try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            #expect(inner["image"] as? String == published)
            #expect(inner["title"] as? String == "Caf\u{e9}", "the rest of the string kept")
            #expect((inner["list"] as? [Any])?.first as? String == published)
            let deeper = try #require(inner["deep"] as? String, "a string inside the string stays one")
            let link = try #require(JSONSerialization.jsonObject(with: Data(deeper.utf8)) as? [String: Any])
            #expect(link["link"] as? String == published)
            #expect(link["note"] as? String == "see \(url)", "a string containing the URL is not the URL")
            #expect(root["elsewhere"]?.stringValue == "[\"\(published)\"]", "a JSON array in a string")
            #expect(root["mention"]?.stringValue == "\(url) ")
        }
    }

    @Test("a transformed image is published as what is attached: the JPEG made from a WebP")
    func transformed() async throws {
        let bed = try bed(converter: true)
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(TestBed.adobePayload(bed.url("/media/banner.webp")))
            let media = try #require(result.attachments.first?.media, "\(result.problems)")
            #expect(media.publication == .published("\(Self.base)/\(media.sha256).jpg"))
            #expect(published() == ["\(media.sha256).jpg"])
            #expect(result.content?.root["adb_media"]?.stringValue == "\(Self.base)/\(media.sha256).jpg")
        }
    }

    @Test("when publishing fails the attachment stays, the content keeps the sender's URL, and a problem says why")
    func failure() async throws {
        // A file where the directory should be.
        try Data().write(to: URL(fileURLWithPath: directory))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bed = try bed()
        try await withEnricher(bed.configuration) { enricher in
            let result = await enricher.enrich(TestBed.adobePayload(bed.url("/media/photo.jpg")))
            #expect(result.attachments.count == 1)
            #expect(result.problems.map(\.code) == [.publishFailed])
            #expect(result.content?.root["adb_media"]?.stringValue == bed.url("/media/photo.jpg"))
        }
    }

    @Test("--publish-dir and --publish-url go together; the URL must be http or https")
    func cli() async throws {
        let alone = try await CLI.run(["enrich", "--publish-dir", directory, "x.json"])
        #expect(alone.status == 64)
        #expect(alone.stderr.contains("--publish-dir: needs --publish-url"), "\(alone.stderr)")
        let url = try await CLI.run(["enrich", "--publish-dir", directory, "--publish-url", "ftp://x", "x.json"])
        #expect(url.status == 64)
        #expect(url.stderr.contains("--publish-url"), "\(url.stderr)")
    }

    /// With a POSIX ACL, a directory's group bits are the mask over its named entries: `drwxrwxr-x+` may let another
    /// user write in it (a probe: uid 65534 given `rwx` replaced a published file). Set here as the kernel stores it
    /// (`system.posix_acl_access`: version 2, then tag, permissions and id, little-endian).
    @Test(
        """
        a directory whose ACL lets another user write in it is refused; a named group, this user, or a mask \
        without write is not
        """)
    func directoryACL() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        chmod(directory, 0o775)
        let publisher = DirectoryPublisher(directory: directory, baseURL: Self.base)
        let anyone = UInt32.max
        func setACL(_ named: [(tag: UInt16, permissions: UInt16, id: UInt32)], mask: UInt16) -> Int32 {
            func le(_ value: UInt32, _ size: Int) -> [UInt8] { (0..<size).map { UInt8(value >> (8 * $0) & 0xFF) } }
            // The kernel takes the entries in the order of their tags.
            let entries =
                ([(UInt16(0x01), UInt16(7), anyone), (0x04, 5, anyone)] + named + [
                    (0x10, mask, anyone), (0x20, 5, anyone),
                ]).sorted { $0.0 < $1.0 }
            let value = le(2, 4) + entries.flatMap { le(UInt32($0.0), 2) + le(UInt32($0.1), 2) + le($0.2, 4) }
            return csystem_set_attribute(directory, "system.posix_acl_access", value, UInt(value.count))
        }
        let set = setACL([(0x02, 7, 65534)], mask: 7)
        // A file system that keeps no ACL has none to check.
        if set == EOPNOTSUPP { return }
        #expect(set == 0)
        do {
            try publisher.check()
            Issue.record("a directory whose ACL lets uid 65534 write passed")
        } catch {
            #expect(
                error.detail == "\(directory) has a POSIX ACL that lets uid 65534 write in it: they could put a file "
                    + "of theirs at a published name")
        }
        for (named, mask) in [
            ([(tag: UInt16(0x02), permissions: UInt16(7), id: UInt32(65534))], UInt16(5)),
            ([(0x08, 7, 65534)], 7), ([(0x02, 7, UInt32(geteuid()))], 7),
        ] {
            #expect(setACL(named, mask: mask) == 0)
            #expect(throws: Never.self, "\(named), mask \(mask)") { try publisher.check() }
        }
    }

    @Test(
        """
        a directory others may write to, or another user's, is refused, at the command's start and before each \
        file; one group may write to, or a link to a directory, is used
        """)
    func directoryChecked() async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let source = directory + "/.source.jpg"
        try Data(fixture("photo.jpg")).write(to: URL(fileURLWithPath: source))
        let sha = TransformStepTests.sha256(of: "photo.jpg")
        let media = FetchedMedia(
            path: source, directory: "", type: .jpeg, bytes: fixture("photo.jpg").count, sha256: sha)
        let publisher = DirectoryPublisher(directory: directory, baseURL: Self.base)
        for mode in [0o777, 0o1777, 0o757] {
            chmod(directory, mode_t(mode))
            let reason = "\(directory) is writable by others (mode \(String(mode, radix: 8))): anyone on this machine"
            #expect(throws: PublishFailure.self) { try publisher.publish(media) }
            #expect(throws: PublishFailure.self) { try publisher.check() }
            do {
                try publisher.check()
            } catch {
                #expect(error.detail.hasPrefix(reason), "\(error.detail)")
            }
            #expect(!published().contains { $0.hasPrefix(sha) }, "nothing written in mode \(mode)")
            let run = try await CLI.run([
                "enrich", "--publish-dir", directory, "--publish-url", Self.base, "--attachments-dir",
                directory + "/attachments", "x.json",
            ])
            #expect(run.status == 64)
            #expect(run.stderr.contains("--publish-dir: " + reason), "\(run.stderr)")
        }
        chmod(directory, 0o775)
        // Another user's directory (even one made in a sticky /tmp) is theirs to fill: refused. The tests run as
        // root here, which may give it away.
        if geteuid() == 0 {
            #expect(chown(directory, 65534, 65534) == 0)
            #expect(throws: PublishFailure.self) { try publisher.publish(media) }
            do {
                try publisher.check()
                Issue.record("another user's directory passed")
            } catch {
                #expect(
                    error.detail.hasPrefix("\(directory) is owned by uid 65534, not by this process's uid 0 or root"),
                    "\(error.detail)")
            }
            #expect(!published().contains { $0.hasPrefix(sha) }, "nothing written in another user's directory")
            #expect(chown(directory, 0, 0) == 0)
        }
        #expect(try publisher.publish(media) == "\(Self.base)/\(sha).jpg")
        // Through a link to the directory: what it leads to is judged, and used.
        let link = directory + "-link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: directory)
        defer { try? FileManager.default.removeItem(atPath: link) }
        #expect(try DirectoryPublisher(directory: link, baseURL: Self.base).publish(media) == "\(Self.base)/\(sha).jpg")
        chmod(directory, 0o777)
        #expect(throws: PublishFailure.self) { try DirectoryPublisher(directory: link, baseURL: Self.base).check() }
        chmod(directory, 0o755)
    }
}
