/// A vendor's way of carrying media in a push payload: where the URL lives and what goes with it.
///
/// Conventions are values registered in a `ConventionRegistry`; library users add their own by conforming to
/// this protocol.
public protocol MediaConvention: Sendable {
    /// The convention's stable name, written as `convention` on attachments (`adb_media`, `zego`).
    var name: String { get }

    /// The media references this convention finds in `payload`, and the problems of fields it reads that hold
    /// the wrong type. Finding nothing is not a problem.
    func scan(_ payload: Payload) -> ConventionScan
}

/// One media URL found in a payload.
public struct MediaReference: Sendable, Hashable {
    /// The URL text as the payload gives it.
    public var url: String
    /// The name of the convention that found it.
    public var convention: String
    /// The attachment identifier to use (unique within the payload, derived from the field).
    public var identifier: String
    /// The key path of the field it came from, for problems (`adb_media`, `payload.image_attachment`).
    public var field: String

    /// A reference.
    public init(url: String, convention: String, identifier: String, field: String) {
        self.url = url
        self.convention = convention
        self.identifier = identifier
        self.field = field
    }
}

/// What a convention found in one payload.
public struct ConventionScan: Sendable, Hashable {
    /// The references, in the order the convention documents.
    public var references: [MediaReference] = []
    /// Fields the convention reads that hold something it cannot use (a number where a URL belongs).
    public var problems: [Problem] = []

    /// An empty scan.
    public init(references: [MediaReference] = [], problems: [Problem] = []) {
        self.references = references
        self.problems = problems
    }

    /// Records the string at `field`, or a `bad-reference` problem when `value` is not a string.
    mutating func take(
        _ value: JSONValue?, field: String, convention: String, identifier: String
    ) {
        guard let value else { return }
        guard let url = value.stringValue else {
            problems.append(
                Problem(
                    source: field, code: .badReference,
                    detail: "\(field) holds \(value.kindDescription); a media URL is a string"))
            return
        }
        references.append(MediaReference(url: url, convention: convention, identifier: identifier, field: field))
    }
}
