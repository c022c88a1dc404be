/// Why an input is not a payload. Its `code` is stable: it goes into JSON output (as the problem code of an
/// `invalid` result) and metrics.
public struct PayloadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable machine code.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// The code's text, as written in JSON output.
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The input is not JSON text.
        public static let notJSON = Code("not-json")
        /// The input is JSON, but not an object.
        public static let notObject = Code("not-object")
        /// Arrays and objects nest deeper than the limit.
        public static let tooDeep = Code("too-deep")
        /// The input is larger than the limit.
        public static let tooLarge = Code("too-large")
        /// The input is not valid UTF-8.
        public static let invalidUTF8 = Code("invalid-utf8")
        /// The input could not be read (a missing file, a directory, a read error).
        public static let unreadable = Code("unreadable")
        /// A queue entry has no payload (`richpush worker`: no `payload` field).
        public static let noPayload = Code("no-payload")
    }

    /// The stable code.
    public let code: Code
    /// A human message with the detail (a byte offset, a size, the system's error text).
    public let detail: String

    /// An error with this code and detail.
    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code): \(detail)" }
}
