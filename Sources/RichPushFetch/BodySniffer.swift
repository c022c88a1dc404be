/// Decides the type of bodies from their first bytes, off the fetch loop's thread: the stage above fetching that
/// the loop hands each body's first bytes to (`SniffService`, on libmagic), and whose verdict sets the body's cap.
/// The loop knows the verdict, not how it is reached.
package protocol BodySniffer: Sendable {
    /// Decides the type of a body from its first bytes; `completion` is called once, on a thread of the sniffer's,
    /// unless the sniffer has stopped.
    func sniff(_ head: [UInt8], completion: @escaping @Sendable (SniffVerdict) -> Void)

    /// Ends the sniffer's work; queued bodies are dropped.
    func stop()
}
