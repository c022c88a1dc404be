internal import CMagic

/// Owns one libmagic cookie (`magic_open` + `magic_load` of the system database). Not thread-safe, as libmagic
/// itself is not: one per thread; the fetch loop owns one.
final class MagicHandle {
    private let cookie: OpaquePointer

    /// Opens and loads libmagic's database.
    init() throws(SnifferError) {
        var error = [CChar](repeating: 0, count: 512)
        guard let cookie = cmagic_open(&error, error.count) else {
            throw SnifferError(detail: String(decoding: error.prefix { $0 != 0 }.map(UInt8.init), as: UTF8.self))
        }
        self.cookie = cookie
    }

    deinit { cmagic_close(cookie) }

    /// magic_buffer over `bytes`: a MIME type when `mime`, else a description; libmagic's text checks run only
    /// when `text` (magic_setflags switches).
    func identify(_ bytes: UnsafeRawBufferPointer, mime: Bool, text: Bool = false) throws(SnifferError) -> String {
        guard cmagic_set_mode(cookie, mime ? 1 : 0, text ? 1 : 0) == 0 else {
            throw SnifferError(detail: "magic_setflags failed")
        }
        guard let text = cmagic_buffer(cookie, bytes.baseAddress, bytes.count) else {
            let message = cmagic_error(cookie).map { String(cString: $0) } ?? "unknown error"
            throw SnifferError(detail: "magic_buffer: \(message)")
        }
        return String(cString: text)
    }
}

@available(*, unavailable)
extension MagicHandle: Sendable {}

/// libmagic could not be loaded or could not judge a buffer.
struct SnifferError: Error, Sendable {
    let detail: String
}
