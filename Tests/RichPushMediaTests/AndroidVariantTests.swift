import RichPushCore
import Testing

@testable import RichPushMedia

@Suite("Android variants: what FCM's Android code shows, decided from the media's record")
struct AndroidVariantTests {
    let variant = AndroidVariant(maximumDimension: 1440)

    func media(_ type: MediaType, bytes: Int = 100_000, size: ImageSize? = ImageSize(width: 1200, height: 800))
        -> FetchedMedia
    {
        FetchedMedia(
            path: "/r/a/b.\(type.fileExtension)", directory: "/r/a", type: type, bytes: bytes, sha256: "00",
            dimensions: size)
    }

    @Test("a still JPEG or PNG within 1 MiB and 1440 pixels a side is kept as it is")
    func kept() {
        #expect(variant.decision(for: media(.jpeg)) == .keep)
        #expect(
            variant.decision(for: media(.png, bytes: 1_048_576, size: ImageSize(width: 1440, height: 1440))) == .keep)
    }

    @Test("video and audio are refused for Android, saying it shows neither")
    func refused() {
        for type in [MediaType.mp4, .mp3, .m4a, .avi] {
            guard case .refuse(let failure) = variant.decision(for: media(type, size: nil)) else {
                Issue.record("\(type.mime) not refused")
                continue
            }
            #expect(failure.code == .unsupportedType)
            #expect(failure.detail.contains("neither video nor audio"))
        }
    }

    @Test("every way out of bounds is a reason to convert, each named")
    func converted() {
        let cases: [(FetchedMedia, [String])] = [
            (media(.gif), ["a GIF (Android shows its first frame; the variant is that frame)"]),
            (media(.webp), ["image/webp, not JPEG or PNG"]),
            (media(.jpeg, bytes: 1_048_577), ["1048577 bytes, over FCM's Android limit of 1048576"]),
            (
                media(.png, size: ImageSize(width: 800, height: 1441)),
                ["800 x 1441 pixels, longer than 1440 on a side"]
            ),
            (media(.jpeg, size: nil), ["its dimensions are not known from its header"]),
            (
                media(.heic, bytes: 2_000_000, size: ImageSize(width: 4032, height: 3024)),
                [
                    "image/heic, not JPEG or PNG", "2000000 bytes, over FCM's Android limit of 1048576",
                    "4032 x 3024 pixels, longer than 1440 on a side",
                ]
            ),
        ]
        for (media, reasons) in cases {
            #expect(variant.decision(for: media) == .convert(reasons), "\(media.type.mime)")
        }
    }
}
