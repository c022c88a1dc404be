internal import CCurl

/// Owns one curl multi handle (`curl_multi_init` / `curl_multi_cleanup`). Every call but `wakeup()` happens on
/// the fetch loop's thread; curl_multi_wakeup is documented as callable from any thread.
final class MultiHandle: @unchecked Sendable {
    let raw: UnsafeMutableRawPointer

    init() {
        guard let raw = curl_multi_init() else { fatalError("curl_multi_init failed") }
        self.raw = raw
    }

    deinit { curl_multi_cleanup(raw) }

    /// curl_multi_setopt with a long argument.
    func set(_ option: CURLMoption, _ value: Int) {
        _ = ccurl_multi_setopt_long(raw, option, value)
    }

    /// curl_multi_add_handle.
    func add(_ easy: EasyHandle) -> Bool { curl_multi_add_handle(raw, easy.raw) == CURLM_OK }

    /// curl_multi_remove_handle.
    func remove(_ easy: EasyHandle) { curl_multi_remove_handle(raw, easy.raw) }

    /// curl_multi_perform: drives every transfer as far as it can go without blocking.
    func perform() {
        var running: Int32 = 0
        _ = curl_multi_perform(raw, &running)
    }

    /// curl_multi_info_read until empty: each finished transfer's easy handle and result.
    func finished() -> [(easy: UnsafeMutableRawPointer, result: CURLcode)] {
        var done: [(UnsafeMutableRawPointer, CURLcode)] = []
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(raw, &remaining) {
            if message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle {
                done.append((easy, message.pointee.data.result))
            }
        }
        return done
    }

    /// How long curl wants to wait before it must be driven again (curl_multi_timeout), in milliseconds;
    /// nil when it has no timer.
    func timeout() -> Int? {
        var milliseconds = -1
        _ = curl_multi_timeout(raw, &milliseconds)
        return milliseconds < 0 ? nil : milliseconds
    }

    /// curl_multi_poll: waits on curl's sockets, at most `milliseconds`, or until `wakeup()`.
    func poll(milliseconds: Int) {
        _ = curl_multi_poll(raw, nil, 0, Int32(clamping: milliseconds), nil)
    }

    /// curl_multi_wakeup: makes a running or the next `poll` return at once. Thread-safe.
    func wakeup() { _ = curl_multi_wakeup(raw) }
}
