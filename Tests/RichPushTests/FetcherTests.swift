import FixtureOrigin
import Foundation
import Testing

@testable import RichPush

@Suite("Fetcher against a loopback origin")
struct FetcherTests {
    static let supported: [(file: String, uti: String, ext: String)] = [
        ("photo.jpg", "public.jpeg", "jpg"),
        ("anim.gif", "com.compuserve.gif", "gif"),
        ("logo.png", "public.png", "png"),
        ("chime.mp3", "public.mp3", "mp3"),
        ("chime-bare.mp3", "public.mp3", "mp3"),
        ("chime.aiff", "public.aiff-audio", "aiff"),
        ("chime.wav", "com.microsoft.waveform-audio", "wav"),
        ("chime.m4a", "public.mpeg-4-audio", "m4a"),
        ("clip-mpeg1.mpg", "public.mpeg", "mpg"),
        ("clip-mpeg2.mpg", "public.mpeg-2-video", "mpg"),
        ("clip.mp4", "public.mpeg-4", "mp4"),
        ("clip.avi", "public.avi", "avi"),
    ]

    @Test("each supported type is stored with its UTI, extension, size and hash", arguments: supported)
    func supportedType(file: String, uti: String, ext: String) async throws {
        let bed = try TestBed()
        try await withFetcher(bed.configuration) { fetcher in
            let result = await fetcher.fetch(bed.url("/media/\(file)"), timeout: .seconds(10))
            let media = try result.get()
            #expect(media.type.uti == uti)
            #expect(media.path.hasSuffix(".\(ext)"))
            #expect(media.path.hasPrefix(bed.attachments + "/"))
            #expect(media.bytes == fixture(file).count)
            #expect(Array(FileManager.default.contents(atPath: media.path)!) == fixture(file))
            let hash = try await sha256sum(media.path)
            #expect(media.sha256 == hash)
        }
    }

    static let unsupported: [(file: String, named: String)] = [
        ("error-page.html", "text/html"),
        ("icon.svg", "image/svg+xml"),
        ("banner.webp", "image/webp"),
        ("leaflet.pdf", "application/pdf"),
        ("photo.heic", "image/heic"),
    ]

    @Test("unsupported types are refused, named, and leave nothing behind", arguments: unsupported)
    func unsupportedType(file: String, named: String) async throws {
        let bed = try TestBed()
        try await withFetcher(bed.configuration) { fetcher in
            // The URL and the Content-Type both claim JPEG: only the bytes count.
            let result = await fetcher.fetch(bed.url("/media/\(file)?type=image/jpeg&as=.jpg"), timeout: .seconds(10))
            guard case .failure(let failure) = result else {
                Issue.record("expected a refusal, got \(result)")
                return
            }
            #expect(failure.code == .unsupportedType)
            #expect(failure.detail.contains(named))
            #expect(bed.entriesOnDisk().isEmpty)
        }
    }

    @Test("a host name that is not ASCII is fetched by its punycode form, whatever the process's locale")
    func internationalHostName() async throws {
        // The name resolves only as curl converts it: xn--bcher-kva is "bücher" in punycode.
        let bed = try TestBed { configuration in
            configuration.network.resolve += configuration.network.resolve.map {
                $0.replacingOccurrences(of: "media.test", with: "xn--bcher-kva.test")
            }
        }
        try await withFetcher(bed.configuration) { fetcher in
            let url = "http://bücher.test:\(bed.origin.port)/media/photo.jpg"
            let media = try await fetcher.fetch(url, timeout: .seconds(10)).get()
            #expect(media.type == .jpeg)
        }
    }

    @Test("a lying Content-Type does not change the sniffed type")
    func lyingContentType() async throws {
        let bed = try TestBed()
        try await withFetcher(bed.configuration) { fetcher in
            let media = try await fetcher.fetch(bed.url("/media/logo.png?type=image/jpeg"), timeout: .seconds(10)).get()
            #expect(media.type == .png)
            #expect(media.path.hasSuffix(".png"))
        }
    }

    @Test(
        "a lying URL extension does not change the sniffed type",
        arguments: [
            ("/as/photo.jpg?file=logo.png", "public.png"),
            ("/as/clip.mp4?file=chime.wav", "com.microsoft.waveform-audio"),
        ])
    func lyingExtension(path: String, uti: String) async throws {
        let bed = try TestBed()
        try await withFetcher(bed.configuration) { fetcher in
            let media = try await fetcher.fetch(bed.url(path), timeout: .seconds(10)).get()
            #expect(media.type.uti == uti)
        }
    }

    @Test("an HTML error page behind a .jpg URL with image/jpeg is refused")
    func htmlBehindJPEG() async throws {
        let bed = try TestBed()
        try await withFetcher(bed.configuration) { fetcher in
            let result = await fetcher.fetch(
                bed.url("/as/banner.jpg?file=error-page.html&type=image/jpeg"), timeout: .seconds(10))
            #expect((try? result.get()) == nil)
            if case .failure(let failure) = result { #expect(failure.code == .unsupportedType) }
        }
    }

    /// Each fetch here is two commands from other threads (the start, then the sniffer's verdict), each sent while
    /// the loop sleeps in curl_multi_poll with nothing else to do (at most a second). A command that found the
    /// inbox empty and did not wake it would leave the fetch to wait out that second: 5-10 s for the five.
    @Test("a command from another thread wakes the sleeping loop: five fetches in a row, in far less than 5 s")
    func idleLoopWakes() async throws {
        let bed = try TestBed()
        try await withFetcher(bed.configuration) { fetcher in
            _ = try await fetcher.fetch(bed.url("/media/photo.jpg?n=warm"), timeout: .seconds(10)).get()
            let elapsed = try await ContinuousClock().measure {
                for index in 0..<5 {
                    _ = try await fetcher.fetch(bed.url("/media/photo.jpg?n=\(index)"), timeout: .seconds(10)).get()
                }
            }
            #expect(elapsed < .milliseconds(2500), "five fetches on an idle loop took \(elapsed)")
        }
    }
}
