extension Enricher {
    /// Where an enricher reports what a host application cannot read from its results: a retry as it is scheduled,
    /// a publication that failed, a shutdown as it begins and ends, and (at `debug`) each payload as it finishes.
    /// Set one as `Enricher.Configuration.logHandler`; the library writes no line of its own anywhere.
    ///
    /// The shape is swift-log's (a level, a message, metadata), so that a handler forwarding to a `Logger` is three
    /// lines; each event also has a stable `name` to filter or count on. `log(_:)` is called on the engine's own
    /// tasks, sometimes several at once: it must be quick and must not block (hand the event on, or append it to a
    /// buffer under a lock).
    public protocol LogHandler: Sendable {
        /// The least severe level this handler wants. Events below it are not built at all, so that a handler
        /// without `debug` costs the engine nothing per payload.
        var minimumLevel: LogEvent.Level { get }

        /// Takes one event.
        func log(_ event: LogEvent)
    }

    /// One thing the engine reports to its `LogHandler`.
    public struct LogEvent: Sendable, Hashable {
        /// How much an event matters, with swift-log's names for the levels the engine uses.
        public enum Level: Int, Sendable, Hashable, Comparable, CaseIterable {
            /// Every payload as it finishes (`payload-finished`).
            case debug
            /// A retry scheduled (`retry`).
            case info
            /// The engine's life: a shutdown begun and finished (`shutdown-began`, `shutdown-finished`).
            case notice
            /// Something the operator should look at: a publication that failed (`publish-failed`).
            case warning

            public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
        }

        /// What happened: a stable code, one per kind of event, with its own level and metadata keys (listed in
        /// docs/library.md's "Logging" section).
        public enum Name: String, Sendable, Hashable, Codable, CaseIterable {
            /// `debug`: a payload's result was handed back. Metadata: `outcome`, `elapsed_ms`, `attachments`,
            /// `problems`, and `input` when the payload came with a name.
            case payloadFinished = "payload-finished"
            /// `info`: a reference's fetch failed and will be made again. Metadata: `url`, `attempt` (the one that
            /// failed), `code`, `detail`, `delay_ms` (the wait before the next attempt).
            case retry
            /// `warning`: an attachment could not be published (it is attached, and the content keeps the sender's
            /// URL). Metadata: `url`, `detail`.
            case publishFailed = "publish-failed"
            /// `notice`: a shutdown began. Metadata: `in_flight` (payloads being processed), `drain_ms` (how long
            /// they are given; absent when each keeps its own deadline).
            case shutdownBegan = "shutdown-began"
            /// `notice`: the shutdown finished: the fetch loop has stopped and the media cache's links are removed.
            /// Metadata: `elapsed_ms` (since it began), `drained` (`true` when every payload finished by itself,
            /// `false` when the drain deadline came first and the rest was cancelled).
            case shutdownFinished = "shutdown-finished"

            /// The level every event of this name has.
            public var level: Level {
                switch self {
                case .payloadFinished: .debug
                case .retry: .info
                case .shutdownBegan, .shutdownFinished: .notice
                case .publishFailed: .warning
                }
            }
        }

        /// The event's kind.
        public var name: Name
        /// Its level (`name.level`).
        public var level: Level { name.level }
        /// One line for a person to read.
        public var message: String
        /// The event's facts, each under a stable key (see `Name`), as text.
        public var metadata: [String: String]

        /// An event (the engine makes them; a handler's tests may too).
        public init(_ name: Name, _ message: String, metadata: [String: String] = [:]) {
            self.name = name
            self.message = message
            self.metadata = metadata
        }
    }

    /// Reports the event `make` builds, when the configured handler wants events of `name`'s level; builds nothing
    /// otherwise.
    func log(_ name: LogEvent.Name, _ make: () -> (message: String, metadata: [String: String])) {
        guard let handler = configuration.logHandler, name.level >= handler.minimumLevel else { return }
        let (message, metadata) = make()
        handler.log(LogEvent(name, message, metadata: metadata))
    }
}
