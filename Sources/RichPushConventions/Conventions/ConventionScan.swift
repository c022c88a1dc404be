import RichPushCore

/// What a convention found in one payload.
public struct ConventionScan: Sendable, Hashable {
    /// The references, in the order the convention documents.
    public var references: [MediaReference] = []
    /// Fields the convention reads that hold something it cannot use (a number where a URL belongs): the first
    /// `maximumProblems`; those past it are counted in `omittedProblems`, not kept.
    public var problems: [EnrichmentProblem] = [] {
        didSet {
            guard problems.count > Self.maximumProblems else { return }
            let extra = problems[Self.maximumProblems...]
            if omittedProblems == 0 { firstOmittedSource = extra.first?.source }
            omittedProblems += extra.count
            omittedBadReferences += extra.lazy.filter { $0.code == .badReference }.count
            problems.removeSubrange(Self.maximumProblems...)
        }
    }
    /// How many problems were found past `maximumProblems`, and not kept.
    public private(set) var omittedProblems = 0
    /// How many of those were `bad-reference`s: references that are not fetched, for the outcome.
    package private(set) var omittedBadReferences = 0
    /// The field of the first problem not kept.
    private var firstOmittedSource: String? = nil
    /// How many problems a scan keeps: 64. Without a bound, a 1 MB Airship `urls` array of 520,000 numbers gave a
    /// problem for each, a 94 MB result line and 369 MB of memory for one payload.
    public static let maximumProblems = 64
    /// Changes to the notification's text the payload asks for (Airship's `content`), in order.
    public var overrides: [AlertOverride] = []

    /// An empty scan.
    public init(references: [MediaReference] = [], problems: [EnrichmentProblem] = [], overrides: [AlertOverride] = [])
    {
        self.references = references
        self.problems = problems
        self.overrides = overrides
    }

    /// Whether `value` is a string escaping a lone UTF-16 surrogate, recorded then as a `bad-reference` problem:
    /// read as U+FFFD, `\ud800` and `\udbff` would be one URL fetched as %EF%BF%BD, which no phone would read.
    package mutating func refusesLoneSurrogate(
        _ value: PushPayload.JSON, field: String, platform: DevicePlatform? = nil
    ) -> Bool {
        guard case .string(let text) = value, text.hasLoneSurrogate else { return false }
        problems.append(
            EnrichmentProblem(
                source: field, code: .badReference,
                detail: "\(field) escapes a lone UTF-16 surrogate; a media URL is Unicode text", platform: platform))
        return true
    }

    /// Records the string at `field` as a reference, or a `bad-reference` problem when `value` is not a string;
    /// nothing when `value` is nil (the key is absent), unless `required` (an entry of the vendor's that must have
    /// a URL: the problem says it is missing). What a convention calls for each media URL it finds.
    /// `platform` is for an input that names references per platform (an FCM message): it goes on the reference and
    /// its problem; nil is an APNs payload's reference (iOS, and no platform on its problem).
    public mutating func take(
        _ value: PushPayload.JSON?, field: String, convention: String, identifier: String, typeHint: String? = nil,
        thumbnail: Thumbnail = Thumbnail(), platform: DevicePlatform? = nil, required: Bool = false
    ) {
        guard let value else {
            guard required else { return }
            problems.append(
                EnrichmentProblem(
                    source: field, code: .badReference, detail: "\(field) is missing; a media URL is a string",
                    platform: platform))
            return
        }
        guard let url = value.stringValue else {
            problems.append(
                EnrichmentProblem(
                    source: field, code: .badReference,
                    detail: "\(field) holds \(value.kindDescription); a media URL is a string", platform: platform))
            return
        }
        guard !refusesLoneSurrogate(value, field: field, platform: platform) else { return }
        references.append(
            MediaReference(
                url: url, convention: convention, identifier: identifier, field: field,
                thumbnail: thumbnail == Thumbnail() ? nil : thumbnail, typeHint: typeHint, platform: platform ?? .ios))
    }

    /// Adds `other`'s problems after these, and what it omitted to what this omits.
    public mutating func takeProblems(of other: ConventionScan) {
        // Its kept problems first: past the bound here, the first of them not kept is the first omitted.
        if !other.problems.isEmpty { problems += other.problems }
        if omittedProblems == 0, other.omittedProblems > 0 { firstOmittedSource = other.firstOmittedSource }
        omittedProblems += other.omittedProblems
        omittedBadReferences += other.omittedBadReferences
    }

    /// Names every field found from further out: `prefix` (`message.apns.payload.`) before each problem's source and
    /// reference's field.
    package mutating func nameFields(within prefix: String) {
        for index in problems.indices { problems[index].source = prefix + problems[index].source }
        for index in references.indices { references[index].field = prefix + references[index].field }
        firstOmittedSource = firstOmittedSource.map { prefix + $0 }
    }

    /// The problems kept and, when some were not, a last `too-many-problems` one saying how many, at the field of
    /// the first not kept.
    public var listedProblems: [EnrichmentProblem] {
        guard omittedProblems > 0 else { return problems }
        return problems + [
            EnrichmentProblem(
                source: firstOmittedSource ?? "", code: .tooManyProblems,
                detail: "\(omittedProblems) more problems in the payload's fields are not listed (only the first "
                    + "\(Self.maximumProblems) are)")
        ]
    }

    // MARK: - Vendor options, each checked; an invalid one is a `bad-option` problem and reads as nil

    private mutating func refuse(_ field: String, _ detail: String) {
        problems.append(EnrichmentProblem(source: field, code: .badOption, detail: detail))
    }

    /// The value at `path` from the payload's root, through objects; the step `KeyPathConvention.jsonStep`
    /// (`@json`) parses a JSON-encoded string first. Nil when a key is absent or a step that must be an object is
    /// not one; such a step is recorded as a `bad-reference` problem, but for a root key of
    /// `KeyPathConvention.genericRoots` (`data`, `body`: another sender's use of the name).
    public mutating func value(at path: [String], in payload: PushPayload) -> PushPayload.JSON? {
        walk(payload, path, into: &self)
    }

    /// `value` as an object, or nil with a `bad-reference` problem naming `field` and what the vendor sends there
    /// (`expected`, such as `{u, t}`).
    mutating func object(_ value: PushPayload.JSON, field: String, expected: String) -> JSONObject? {
        guard case .object(let object) = value else {
            problems.append(
                EnrichmentProblem(
                    source: field, code: .badReference,
                    detail: "\(field) holds \(value.kindDescription); expected \(expected)"))
            return nil
        }
        return object
    }

    /// The string at `field` (`name` in the message; default the field); a `bad-option` problem when it is not one.
    public mutating func string(_ value: PushPayload.JSON?, field: String, named name: String? = nil) -> String? {
        guard let value else { return nil }
        guard let text = value.stringValue else {
            refuse(field, "\(name ?? field) holds \(value.kindDescription); expected a string")
            return nil
        }
        return text
    }

    /// The alert text `object` gives in `title`, `subtitle` and `body` (each a string, else `bad-option`), as an
    /// override; fields are named under `field`.
    mutating func alertText(_ object: JSONObject, field: String) -> AlertOverride {
        var override = AlertOverride()
        for (key, path) in [("title", \AlertOverride.title), ("subtitle", \.subtitle), ("body", \.body)] {
            override[keyPath: path] = string(object[key], field: "\(field).\(key)")
        }
        return override
    }

    /// A boolean at `field`.
    public mutating func flag(_ value: PushPayload.JSON?, field: String, named name: String) -> Bool? {
        switch value {
        case nil: return nil
        case .bool(let flag)?: return flag
        default:
            refuse(field, "\(name) must be a boolean")
            return nil
        }
    }

    /// A number of seconds at `field`: 0 or more, or any finite number `allowingNegative` (Airship's `time`).
    public mutating func seconds(
        _ value: PushPayload.JSON?, field: String, named name: String, allowingNegative: Bool = false
    ) -> Double? {
        guard let value else { return nil }
        guard case .number(let text) = value, let seconds = Double(text), seconds >= 0 || allowingNegative,
            seconds.isFinite
        else {
            refuse(field, "\(name) must be a number of seconds\(allowingNegative ? "" : ", 0 or more")")
            return nil
        }
        return seconds
    }

    /// A clipping rectangle {x, y, width, height}, each in 0...1, at `field`.
    mutating func clip(_ value: PushPayload.JSON?, field: String, named name: String) -> Thumbnail.Clip? {
        guard let value else { return nil }
        let values = ["x", "y", "width", "height"].compactMap { key -> Double? in
            guard case .number(let text)? = value.objectValue?[key], let number = Double(text), (0...1).contains(number)
            else {
                return nil
            }
            return number
        }
        guard values.count == 4 else {
            refuse(field, "\(name) needs x, y, width and height, each a number from 0 to 1")
            return nil
        }
        return Thumbnail.Clip(x: values[0], y: values[1], width: values[2], height: values[3])
    }
}
