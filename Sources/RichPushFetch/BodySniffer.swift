/// Decides the type of bodies from their first bytes, off the fetch loop's thread: the stage above fetching that
/// the loop hands each body's first bytes to (`SniffService`, on libmagic), and whose verdict sets the body's cap.
/// The loop knows the verdict, not how it is reached.
package protocol BodySniffer: Sendable {
    /// Decides the type of a body from its first bytes; `completion` is called once, on a thread of the sniffer's,
    /// unless the sniffer has stopped.
    func sniff(_ head: [UInt8], completion: @escaping @Sendable (SniffVerdict) -> Void)

    /// The verdict now, on the calling thread (the fetch loop's), when reaching it there is cheap and bounded: nil
    /// when it is not (the caller then hands the head to `sniff`). A hand-off to another thread and back costs two
    /// wake-ups a body, which on a busy loop is more than the check of a common image.
    func decideAtOnce(_ head: [UInt8]) -> SniffVerdict?

    /// Ends the sniffer's work; queued bodies are dropped.
    func stop()
}
