import Foundation

/// The routes the tests and the demo use, over the files in `Fixtures/media`.
///
/// - `/media/NAME`: the file, with `?type=MIME` as its Content-Type (default: by extension, which tests
///   make lie on purpose with `?type=`), with an ETag; `If-None-Match` with it is answered 304.
///   `/dated/NAME`: the same with a Last-Modified date instead of an ETag; `If-Modified-Since` with exactly that
///   date is answered 304.
///   `/as/ANY-NAME?file=NAME`: the file under a URL that lies about it. `/untyped/NAME`: the file with no
///   Content-Type at all.
/// - `/status/CODE?file=NAME`: that status, with the file (or a short text) as the body.
/// - `/redirect/N?to=PATH`: N more 302 hops, then PATH. `/redirect-to?url=URL`: one 302 to any URL.
/// - `/redirect-loop`: a 302 to itself. `/no-location`: a 302 without Location.
/// - `/drip/NAME?bytes=B&ms=M`: the file, B bytes every M ms. `/slow/NAME?ms=M`: the whole file after M ms.
/// - `/stall`: headers, then nothing. `/silence`: no answer at all.
/// - `/stall-first/NAME`: the first request for this path and query stalls as `/stall`; every later one gets the
///   file at once (a fetch that can only end by its deadline, then one that succeeds, whatever the load).
/// - `/generated?prefix=NAME&bytes=N[&declare=D|&nolength=1|&excess=E|&late-excess=E]`: the first 4 KB of NAME,
///   then zeros to N bytes; with `excess`, E bytes ('x') follow the body, beyond its Content-Length, and the
///   connection stays open; with `late-excess`, they are sent only once the connection's next request is read,
///   before its response.
/// - `/huge-headers?kb=N`: N KB of header fields before a JPEG. `?encoding=E` on `/media` adds Content-Encoding.
/// - `/empty`: 200 with no body. `/partial/NAME`: a 206.
/// - `/fail-first/N/CODE/NAME?retry-after=V`: the first N requests for this path and query are answered CODE
///   (with `Retry-After: V` when given), every later one gets the file (a transient failure, then recovery).
/// - `/fail-after/N/CODE/NAME`: the first N requests for this path and query are answered as `/media/NAME` (with
///   its ETag, and 304 to it), the next one CODE (0: it stalls as `/stall`), every later one as `/media/NAME` again
///   (an origin failing once).
/// - `/rotating-etag/NAME`: the file with ETag `"vN"` at the Nth request for this path and query; a request whose
///   If-None-Match is the previous request's ETag is answered 304, with the new one (a validator that changes).
/// - `/drop-first/N/NAME[?reset=1]`: the first N requests for this path and query have their connection closed
///   with no answer (with `reset=1`, by an RST), every later one gets the file.
public enum FixtureRoutes {
    /// The repository's `Fixtures` directory, found from this source file's location.
    public static var fixturesDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures").path
    }

    /// A handler serving `mediaDirectory` through the routes above.
    public static func handler(mediaDirectory: String = fixturesDirectory + "/media")
        -> @Sendable (
            HTTPOrigin.Request
        ) -> HTTPOrigin.Response
    {
        let cache = MediaCache(directory: mediaDirectory)
        let seen = TargetCounts()
        return { request in route(request, cache, seen) }
    }

    /// `count` bytes of 'x' (a query value; none when missing or not a positive number): excess past a body.
    private static func filler(_ count: String?) -> [UInt8] {
        [UInt8](repeating: UInt8(ascii: "x"), count: max(0, count.flatMap { Int($0) } ?? 0))
    }

    private static func route(
        _ request: HTTPOrigin.Request, _ media: MediaCache, _ seen: TargetCounts
    ) -> HTTPOrigin.Response {
        let parts = request.path.split(separator: "/").map(String.init)
        guard let first = parts.first else { return notFound }
        let rest = parts.dropFirst().joined(separator: "/")
        let type = request.query["type"]
        func file(_ name: String) -> [UInt8]? { media.bytes(name) }
        func headers(_ name: String) -> [(String, String)] {
            [("Content-Type", type ?? MediaCache.mimeType(name))]
                + (request.query["encoding"].map { [("Content-Encoding", $0)] } ?? [])
        }
        switch first {
        case "media", "dated":
            guard let bytes = file(rest) else { return notFound }
            // A strong validator (the name and size: fixtures do not change while served), or a fixed date. The
            // date must come back exactly as sent: a client that rewrites it is not revalidating what it has.
            let (field, condition, value) =
                first == "media"
                ? ("ETag", "if-none-match", "\"\(rest)-\(bytes.count)\"")
                : ("Last-Modified", "if-modified-since", lastModified)
            if request.headers[condition] == value {
                return .init(status: 304, headers: [(field, value)], body: .bytes([]), omitLength: true)
            }
            return .init(headers: headers(rest) + [(field, value)], body: .bytes(bytes))
        case "as":
            guard let name = request.query["file"], let bytes = file(name) else { return notFound }
            return .init(headers: [("Content-Type", type ?? MediaCache.mimeType(rest))], body: .bytes(bytes))
        case "untyped":
            guard let bytes = file(rest) else { return notFound }
            return .init(body: .bytes(bytes))
        case "status":
            let code = Int(rest) ?? 500
            let body = request.query["file"].flatMap(file) ?? Array("status \(code)\n".utf8)
            return .init(status: code, headers: [("Content-Type", type ?? "image/jpeg")], body: .bytes(body))
        case "redirect":
            let remaining = Int(rest) ?? 0
            let target = request.query["to"] ?? "/media/photo.jpg"
            let location = remaining <= 1 ? target : "/redirect/\(remaining - 1)?to=\(target)"
            return .init(status: 302, headers: [("Location", location)])
        case "redirect-to":
            return .init(status: 302, headers: [("Location", request.query["url"] ?? "/")])
        case "redirect-loop":
            return .init(status: 302, headers: [("Location", "/redirect-loop")])
        case "no-location":
            return .init(status: 302, headers: [("Content-Type", "text/plain")], body: .bytes(Array("moved\n".utf8)))
        case "drip":
            guard let bytes = file(rest) else { return notFound }
            let chunk = Int(request.query["bytes"] ?? "1") ?? 1
            let milliseconds = Int(request.query["ms"] ?? "1000") ?? 1000
            return .init(
                headers: headers(rest), body: .drip(bytes, chunkSize: chunk, interval: .milliseconds(milliseconds)))
        case "slow":
            guard let bytes = file(rest) else { return notFound }
            let milliseconds = Int(request.query["ms"] ?? "1000") ?? 1000
            // A first byte at once keeps the transfer above curl's low-speed floor; the rest waits.
            return .init(
                headers: headers(rest),
                body: .drip(bytes, chunkSize: max(bytes.count - 1, 1), interval: .milliseconds(milliseconds)))
        case "stall":
            return .init(headers: [("Content-Type", "image/jpeg")], body: .stall)
        case "fail-after":
            let fields = rest.split(separator: "/", maxSplits: 2).map(String.init)
            guard fields.count == 3, let before = Int(fields[0]), let code = Int(fields[1]) else { return notFound }
            guard seen.next(request.target) == before + 1 else {
                var served = request
                served.path = "/media/" + fields[2]
                return route(served, media, seen)
            }
            guard code != 0 else { return .init(headers: headers(fields[2]), body: .stall) }
            return .init(
                status: code, headers: [("Content-Type", "text/plain")], body: .bytes(Array("failing now\n".utf8)))
        case "rotating-etag":
            guard let bytes = file(rest) else { return notFound }
            let count = seen.next(request.target)
            let etag = [("ETag", "\"v\(count)\"")]
            if request.headers["if-none-match"] == "\"v\(count - 1)\"" {
                return .init(status: 304, headers: etag, body: .bytes([]), omitLength: true)
            }
            return .init(headers: headers(rest) + etag, body: .bytes(bytes))
        case "stall-first":
            guard let bytes = file(rest) else { return notFound }
            return .init(headers: headers(rest), body: seen.next(request.target) == 1 ? .stall : .bytes(bytes))
        case "fail-first", "drop-first":
            // N, then (fail-first) the status code, then the file's name.
            let fields = rest.split(separator: "/", maxSplits: first == "fail-first" ? 2 : 1).map(String.init)
            guard fields.count == (first == "fail-first" ? 3 : 2), let failures = Int(fields[0]),
                let bytes = file(fields[fields.count - 1])
            else { return notFound }
            guard seen.next(request.target) <= failures else {
                return .init(headers: headers(fields[fields.count - 1]), body: .bytes(bytes))
            }
            if first == "drop-first" { return .init(body: .drop(reset: request.query["reset"] == "1")) }
            let retryAfter = request.query["retry-after"].map { [("Retry-After", $0)] } ?? []
            return .init(
                status: Int(fields[1]) ?? 503, headers: [("Content-Type", "text/plain")] + retryAfter,
                body: .bytes(Array("try again later\n".utf8)))
        case "silence":
            return .init(body: .silence)
        case "generated":
            let prefix = request.query["prefix"].flatMap(file).map { Array($0.prefix(4096)) } ?? []
            let total = Int(request.query["bytes"] ?? "0") ?? 0
            return .init(
                headers: [("Content-Type", type ?? "application/octet-stream")],
                body: .generated(prefix: prefix, total: total),
                declaredLength: request.query["declare"].flatMap { Int($0) },
                omitLength: request.query["nolength"] != nil,
                excess: filler(request.query["excess"]), lateExcess: filler(request.query["late-excess"]))
        case "huge-headers":
            let kilobytes = Int(request.query["kb"] ?? "200") ?? 200
            let filler = String(repeating: "x", count: 1000)
            let headers = (0..<kilobytes).map { ("X-Filler-\($0)", filler) }
            return .init(headers: [("Content-Type", "image/jpeg")] + headers, body: .bytes(file("photo.jpg") ?? []))
        case "empty":
            return .init(headers: [("Content-Type", "image/jpeg")], body: .bytes([]))
        case "partial":
            guard let bytes = file(rest) else { return notFound }
            return .init(
                status: 206, headers: headers(rest) + [("Content-Range", "bytes 0-\(bytes.count - 1)/*")],
                body: .bytes(bytes))
        default:
            return notFound
        }
    }

    /// The Last-Modified date of every `/dated/` file.
    public static let lastModified = "Wed, 21 Oct 2015 07:28:00 GMT"

    private static let notFound = HTTPOrigin.Response(
        status: 404, headers: [("Content-Type", "text/html")],
        body: .bytes(Array("<html><body>Not Found</body></html>\n".utf8)))
}

/// How many times each request target has been asked for (for `/stall-first`, `/fail-first`, `/drop-first`).
private final class TargetCounts: @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [String: Int] = [:]

    /// Counts one more request for `target`; returns its number (1 for the first).
    func next(_ target: String) -> Int {
        lock.lock()
        defer { lock.unlock() }
        counts[target, default: 0] += 1
        return counts[target]!
    }
}

/// Fixture files read once and kept.
private final class MediaCache: @unchecked Sendable {
    private let directory: String
    private let lock = NSLock()
    private var files: [String: [UInt8]] = [:]

    init(directory: String) { self.directory = directory }

    func bytes(_ name: String) -> [UInt8]? {
        guard !name.isEmpty, !name.contains(".."), !name.contains("/") else { return nil }
        lock.lock()
        defer { lock.unlock() }
        if let cached = files[name] { return cached }
        guard let data = FileManager.default.contents(atPath: directory + "/" + name) else { return nil }
        files[name] = Array(data)
        return files[name]
    }

    static func mimeType(_ name: String) -> String {
        switch (name as NSString).pathExtension.lowercased() {
        case "jpg", "jpeg": return "image/jpeg"
        case "gif": return "image/gif"
        case "png": return "image/png"
        case "mp3": return "audio/mpeg"
        case "aiff": return "audio/aiff"
        case "wav": return "audio/wav"
        case "m4a": return "audio/mp4"
        case "mpg": return "video/mpeg"
        case "mp4": return "video/mp4"
        case "avi": return "video/x-msvideo"
        case "html": return "text/html"
        case "svg": return "image/svg+xml"
        default: return "application/octet-stream"
        }
    }
}
