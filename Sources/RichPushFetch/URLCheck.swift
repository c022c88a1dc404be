internal import CCurl
import RichPushCore

/// The checks a URL passes before any socket opens: length, characters, scheme, credentials, and curl's own
/// parser. The address it leads to is judged later, where the connection is made.
struct URLCheck: Sendable {
    var allowHTTP: Bool
    var maximumLength: Int
    var allowedPorts: [ClosedRange<Int>]
    /// How refusals name the settings that would lift them.
    var names = SettingNames()

    /// The checks of the URL's text alone: not empty, within the length limit, no space or control character.
    /// A redirect's Location is checked with these as received, before curl resolves and encodes it.
    func checkText(_ url: String) -> FetchFailure? {
        guard !url.isEmpty else { return FetchFailure(.badURL, "the URL is empty") }
        guard url.utf8.count <= maximumLength else {
            return FetchFailure(.badURL, "the URL is \(url.utf8.count) bytes; the limit is \(maximumLength)")
        }
        if let byte = url.utf8.first(where: { $0 < 0x20 || $0 == 0x7F || $0 == 0x20 }) {
            let what = byte == 0x20 ? "a space" : "control character 0x\(String(byte, radix: 16))"
            return FetchFailure(.badURL, "the URL contains \(what)")
        }
        return nil
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }

    /// The URL, or why it is refused (`bad-url` or `blocked-scheme`).
    func check(_ url: String) -> FetchFailure? {
        if let refusal = checkText(url) { return refusal }
        // A scheme is a letter, then letters, digits, '+', '-' and '.' (RFC 3986 3.1): `//host/x` and
        // `127.0.0.1:80/x` have none, where a colon's prefix was taken for one (`blocked-scheme`).
        guard let colon = url.firstIndex(of: ":"), let first = url.utf8.first, Self.isLetter(first),
            url.utf8[..<colon].allSatisfy({
                Self.isLetter($0) || (0x30...0x39).contains($0) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E
            })
        else {
            return FetchFailure(.badURL, "the URL has no scheme")
        }
        let scheme = url[..<colon].lowercased()
        let allowed = allowHTTP ? ["https", "http"] : ["https"]
        guard allowed.contains(scheme) else {
            if scheme == "http" {
                return FetchFailure(
                    .blockedScheme, "http is not allowed (only https; see \(names["network.allowHTTP"]))")
            }
            return FetchFailure(
                .blockedScheme, "scheme '\(scheme)' is not allowed (only \(allowed.joined(separator: ", ")))")
        }
        guard let handle = curl_url() else { fatalError("curl_url failed") }
        defer { curl_url_cleanup(handle) }
        let parsed = curl_url_set(handle, CURLUPART_URL, url, 0)
        guard parsed == CURLUE_OK else {
            return FetchFailure(.badURL, String(cString: curl_url_strerror(parsed)))
        }
        for (part, name) in [(CURLUPART_USER, "a user name"), (CURLUPART_PASSWORD, "a password")] {
            var value: UnsafeMutablePointer<CChar>? = nil
            if curl_url_get(handle, part, &value, 0) == CURLUE_OK, value != nil {
                curl_free(value)
                return FetchFailure(.badURL, "the URL carries \(name); credentials are never sent")
            }
        }
        var host: UnsafeMutablePointer<CChar>? = nil
        guard curl_url_get(handle, CURLUPART_HOST, &host, 0) == CURLUE_OK, let host else {
            return FetchFailure(.badURL, "the URL has no host")
        }
        curl_free(host)
        var port: UnsafeMutablePointer<CChar>? = nil
        // CURLU_DEFAULT_PORT: the scheme's port when the URL names none.
        if curl_url_get(handle, CURLUPART_PORT, &port, UInt32(CURLU_DEFAULT_PORT)) == CURLUE_OK, let port {
            defer { curl_free(port) }
            let number = Int(String(cString: port)) ?? -1
            guard allowedPorts.contains(where: { $0.contains(number) }) else {
                return FetchFailure(
                    .blockedPort, "port \(number) is not allowed (see \(names["network.allowedPorts"]))")
            }
        }
        return nil
    }
}
