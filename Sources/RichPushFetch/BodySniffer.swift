/// Decides the type of bodies from their first bytes, off the fetch loop's thread: the stage above fetching that
/// the loop hands each body's first bytes to (`SniffService`, on libmagic), and whose verdict sets the body's cap.
/// The loop knows the verdict, not how it is reached.
package protocol BodySniffer: Sendable {
    /// Decides the type of a body from its first bytes: with `atOnce`, on the calling thread (the fetch loop's) when
    /// reaching it there is cheap and bounded, returning the verdict; else (nil returned) `completion` is called
    /// once unless the sniffer has stopped: on a thread of the sniffer's, or on the calling thread for a refusal
    /// it does not name (it never runs the caller's work there). A hand-off to another thread and back
    /// costs two wake-ups a body, which on a busy loop is more than the check of a common image.
    func sniff(_ head: [UInt8], atOnce: Bool, completion: @escaping @Sendable (SniffVerdict) -> Void) -> SniffVerdict?

    /// Ends the sniffer's work; queued bodies are dropped.
    func stop()
}
