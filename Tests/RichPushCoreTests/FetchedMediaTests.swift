import Testing

@testable import RichPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// `FetchedMedia` and `FetchFailure` keep their fields in a box shared by their copies (`SharedFields`): value
/// semantics checks, since a change through one copy that reached another would move one payload's attachment (or
/// failure) into another's result.
@Suite("Fetched media and failures")
struct FetchedMediaTests {
    private static func media() -> FetchedMedia {
        FetchedMedia(
            path: "/root/a/a.jpg", directory: "/root/a", type: .jpeg, bytes: 100, sha256: "ab",
            validators: Validators(etag: "\"1\""))
    }

    @Test("a changed copy changes alone: every field, the original and other copies keep theirs")
    func copiesChangeAlone() {
        let original = Self.media()
        var changed = original
        let untouched = original
        changed.path = "/root/b/b.png"
        changed.directory = "/root/b"
        changed.type = .png
        changed.bytes = 200
        changed.sha256 = "cd"
        changed.validators.etag = "\"2\""
        changed.transformation = Transformation(
            steps: [.transcoded], original: Transformation.Original(type: .gif, bytes: 300, sha256: "ef"))
        changed.dimensions = ImageSize(width: 3, height: 4)
        changed.damage = "cut short"
        changed.publication = .published("https://cdn.example/b.png")
        changed.provenance = FetchedMedia.Provenance(redirects: ["https://a.example/"], contentType: "image/png")
        var info = stat()
        info.st_ino = 7
        changed.identity = FileIdentity(info)
        for media in [original, untouched] {
            #expect(media == Self.media())
            #expect(media.path == "/root/a/a.jpg" && media.directory == "/root/a" && media.type == .jpeg)
            #expect(media.bytes == 100 && media.sha256 == "ab" && media.validators.etag == "\"1\"")
            #expect(media.dimensions == nil && media.damage == nil && media.publication == nil)
            #expect(media.transformation == nil && media.provenance == nil && media.identity == nil)
        }
        #expect(changed.path == "/root/b/b.png" && changed.directory == "/root/b" && changed.type == .png)
        #expect(changed.bytes == 200 && changed.sha256 == "cd" && changed.validators.etag == "\"2\"")
        #expect(changed.dimensions == ImageSize(width: 3, height: 4) && changed.damage == "cut short")
        #expect(changed.publication == .published("https://cdn.example/b.png"))
        #expect(changed.provenance?.contentType == "image/png")
        #expect(changed.transformation?.original.sha256 == "ef" && changed.identity?.inode == 7)
        #expect(changed != original)
    }

    @Test("equal fields are equal values with equal hashes, whether they share a box or not")
    func equalityByFields() {
        var one = Self.media()
        var other = Self.media()
        #expect(one == other)
        #expect(one.hashValue == other.hashValue)
        one.damage = "x"
        #expect(one != other)
        other.damage = "x"
        #expect(one == other)
        #expect(Set([one, other, one]).count == 1)
        var third = one
        third.damage = nil
        #expect(third != one)
        #expect(third == Self.media())
    }

    @Test("described by its fields, as a struct is, not by its box")
    func description() {
        let described = String(describing: Self.media())
        #expect(described.contains("path: \"/root/a/a.jpg\"") && described.contains("bytes: 100"))
        #expect(!described.contains("Box"))
    }

    @Test("a failure's copy changes alone; equal by fields; described by them")
    func failures() {
        let original = FetchFailure(.httpStatus, "HTTP 503", cause: .status(503, retryAfter: "1"))
        var changed = original
        changed.detail = "HTTP 404"
        changed.code = .emptyBody
        changed.cause = nil
        #expect(original.code == .httpStatus && original.detail == "HTTP 503")
        #expect(original.cause == .status(503, retryAfter: "1"))
        #expect(changed.code == .emptyBody && changed.detail == "HTTP 404" && changed.cause == nil)
        #expect(original == FetchFailure(.httpStatus, "HTTP 503", cause: .status(503, retryAfter: "1")))
        #expect(
            original.hashValue == FetchFailure(.httpStatus, "HTTP 503", cause: .status(503, retryAfter: "1")).hashValue)
        #expect(changed != original)
        let described = String(describing: original)
        #expect(described.contains("detail: \"HTTP 503\"") && !described.contains("Box"))
    }
}
